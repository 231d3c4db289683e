//! `curator chat`: an interactive conversation with an OpenAI-compatible model, on a
//! conversational loop whose human-in-the-loop step is the person at the terminal. The loop
//! is checkpointed in a SQLite file after every exchange, so Ctrl-C (or a closed terminal)
//! pauses it and the same command resumes it.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use curator::client::OpenAiClient;
use curator::conversation_loop::{
    ConversationLoop, ConversationRole, HistoryStrategy, Hitl, LoopBuilder, LoopConfig,
    LoopOutcome, ModelStep,
};
use curator::session::SessionStore as _;
use curator::sqlite::SqliteStore;
use curator::strategies::Redactor;
use serde_json::json;

use crate::output::{note, out, outln};
use crate::pipeline::TokenizerArg;

/// The loop's name in the session file: one chat loop per session key.
const LOOP_NAME: &str = "chat";
/// The human's step and the model's.
const USER: &str = "user";
const ASSISTANT: &str = "assistant";

/// How the chat bounds the history it sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StrategyArg {
    /// The newest turns within --max-tokens.
    TruncateTokens,
    /// The newest --max-turns turns.
    TruncateTurns,
    /// Old turns folded into an extractive summary, then bounded.
    Summarize,
}

/// The options of `curator chat`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ChatArgs {
    /// The server: scheme, host and port (`http://localhost:11434`), with or without `/v1`.
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: String,
    /// The model name the server knows.
    #[arg(long)]
    pub(crate) model: String,
    /// The session: the same name resumes the same conversation.
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub(crate) session: String,
    /// The SQLite file the conversation is kept in.
    #[arg(long, value_name = "FILE", default_value = "curator-chat.db")]
    pub(crate) db: PathBuf,
    /// The system prompt.
    #[arg(long, value_name = "TEXT")]
    pub(crate) system: Option<String>,
    /// The environment variable holding the API key, sent as a bearer token (by default
    /// `OPENAI_API_KEY`, when set; a variable named here must be set).
    #[arg(long, value_name = "VAR")]
    pub(crate) api_key_env: Option<String>,
    /// Seconds to wait for a reply.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub(crate) timeout: u64,
    /// A loop configuration (TOML or JSON: `history_management`, `history_template`,
    /// `redact`, …); the flags below override its history settings.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// How the history is bounded (default: truncate-tokens).
    #[arg(long, value_enum)]
    pub(crate) strategy: Option<StrategyArg>,
    /// The token budget of the history sent (default 4096).
    #[arg(long, value_name = "N")]
    pub(crate) max_tokens: Option<u64>,
    /// The turn limit (with truncate-turns, or summarize without --max-tokens).
    #[arg(long, value_name = "N")]
    pub(crate) max_turns: Option<usize>,
    /// How tokens are counted (default o200k).
    #[arg(long, value_enum)]
    pub(crate) tokenizer: Option<TokenizerArg>,
    /// Drop the message a failed exchange kept, instead of sending it again at the start.
    #[arg(long)]
    pub(crate) discard_unsent: bool,
}

/// The loop configuration: the file's, or a conversational default, with the flags over it.
fn config(args: &ChatArgs) -> Result<LoopConfig> {
    let mut config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let is_json =
                path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{');
            if is_json { LoopConfig::from_json(&text) } else { LoopConfig::from_toml(&text) }
                .with_context(|| format!("in {}", path.display()))?
        }
        None => LoopConfig::conversational(),
    };
    config.conversation = true;
    // A chat goes on as long as the person does.
    config.max_iterations = u64::MAX;
    // A reply that calls a tool is shown and recorded, never dropped for having no text.
    config.include_tool_artifacts = true;
    // `curator trace` shows what the model was sent at each turn.
    config.lens = true;
    let history = &mut config.history_management;
    if let Some(strategy) = args.strategy {
        history.strategy = Some(match strategy {
            StrategyArg::TruncateTokens => HistoryStrategy::TruncateTokens,
            StrategyArg::TruncateTurns => HistoryStrategy::TruncateTurns,
            StrategyArg::Summarize => HistoryStrategy::Summarize,
        });
        if strategy == StrategyArg::Summarize && history.summarizer.is_none() {
            history.summarizer = Some("extractive".to_owned());
        }
    }
    history.max_tokens = args.max_tokens.or(history.max_tokens);
    history.max_turns = args.max_turns.or(history.max_turns);
    history.tokenizer = args.tokenizer.map(Into::into).or(history.tokenizer);
    config.validate()?;
    Ok(config)
}

/// Whether the chat's configuration redacts what it persists.
fn chat_redacts(args: &ChatArgs) -> Result<bool> {
    Ok(config(args)?.redact.persisted)
}

/// The API key to send: from the variable `--api-key-env` names (which must be set), else
/// from `OPENAI_API_KEY` when it is set.
fn api_key(args: &ChatArgs) -> Result<Option<String>> {
    let set = |var: &str| std::env::var(var).ok().filter(|k| !k.is_empty());
    match &args.api_key_env {
        Some(var) => set(var)
            .map(Some)
            .with_context(|| format!("--api-key-env {var}: the variable {var} is not set")),
        None => Ok(set("OPENAI_API_KEY")),
    }
}

/// The session's system prompt: the one `--system` gives, kept in the session file for the
/// next start, else the one kept there before.
fn system_prompt(store: &SqliteStore, args: &ChatArgs) -> Result<Option<String>> {
    let checkpoint = format!("curator.chat.system/{}", args.session);
    if let Some(system) = &args.system {
        // Kept as the chat keeps everything: redacted when it redacts what it persists.
        let kept = if chat_redacts(args)? {
            Redactor::new().redact(system).into_owned()
        } else {
            system.clone()
        };
        store
            .put_checkpoint(&checkpoint, &serde_json::Value::from(kept))
            .context("cannot keep the system prompt in the session file")?;
        return Ok(Some(system.clone()));
    }
    let kept = store
        .checkpoint(&checkpoint)
        .context("cannot read the session's system prompt")?
        .and_then(|c| c.document.as_str().map(str::to_owned));
    Ok(kept)
}

/// The message of an exchange not known to be recorded yet: kept in the session file before
/// it is sent, cleared once the loop has recorded it, so that a failed exchange (the server
/// down, Ctrl-C, a crash) never loses what the person typed.
struct Unsent {
    store: SqliteStore,
    checkpoint: String,
    /// Redacted before it is kept, when the chat redacts what it persists.
    redactor: Option<Redactor>,
}

impl Unsent {
    fn new(args: &ChatArgs, redact: bool) -> Result<Self> {
        let store = crate::session_file::open_sqlite(&args.db, false)?;
        Ok(Self {
            store,
            checkpoint: format!("curator.chat.unsent/{}", args.session),
            redactor: redact.then(Redactor::new),
        })
    }

    /// The kept message, unless the loop recorded it since (its iteration went past the one
    /// the message was typed in).
    fn take(&self, iteration: u64) -> Result<Option<String>> {
        let kept = self.store.checkpoint(&self.checkpoint).context("cannot read the session")?;
        let Some(document) = kept.map(|c| c.document) else { return Ok(None) };
        let typed_in = document["iteration"].as_u64();
        Ok(document["text"]
            .as_str()
            .filter(|_| typed_in.is_some_and(|i| i >= iteration))
            .map(str::to_owned))
    }

    fn keep(&self, text: &str, iteration: u64) -> Result<()> {
        let text = match &self.redactor {
            Some(redactor) => redactor.redact(text).into_owned(),
            None => text.to_owned(),
        };
        self.store
            .put_checkpoint(&self.checkpoint, &json!({"text": text, "iteration": iteration}))
            .context("cannot keep your message in the session file")?;
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        self.store
            .put_checkpoint(&self.checkpoint, &serde_json::Value::Null)
            .context("cannot update the session file")?;
        Ok(())
    }
}

fn build(args: &ChatArgs) -> Result<ConversationLoop> {
    if !(args.base_url.starts_with("http://") || args.base_url.starts_with("https://")) {
        anyhow::bail!(
            "--base-url {}: give the server as http://HOST:PORT or https://HOST (with or without /v1)",
            crate::session_file::without_password(&args.base_url)
        );
    }
    let store = crate::session_file::open_sqlite(&args.db, false)?;
    let mut client = OpenAiClient::new(&args.base_url, &args.model)
        .with_timeout(Duration::from_secs(args.timeout.max(1)));
    if let Some(key) = api_key(args)? {
        client = client.with_api_key(key);
    }
    let mut model = ModelStep::new(client);
    if let Some(system) = system_prompt(&store, args)? {
        model = model.with_system(system);
    }
    Ok(LoopBuilder::new(LOOP_NAME, config(args)?)
        .step(USER, Hitl::new("you"))
        .step(ASSISTANT, model)
        .store(store, args.session.as_str())
        .build()?)
}

fn say(role: ConversationRole, text: &str) -> std::io::Result<()> {
    let who = match role {
        ConversationRole::User => "you",
        ConversationRole::Assistant => "assistant",
    };
    outln!("{who}> {}", shown(text))
}

/// A turn as the terminal shows it: the tool calls a reply holds (kept in the turn as JSON
/// lines) as `[tool call] name(arguments)`.
fn shown(text: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let call = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("tool_call").cloned());
            match call {
                Some(call) => format!(
                    "[tool call] {}({})",
                    call["name"].as_str().unwrap_or("?"),
                    call["arguments"].as_str().unwrap_or_default()
                ),
                None => line.to_owned(),
            }
        })
        .collect();
    lines.join("\n")
}

/// Sends `text` as the person's message: kept first, cleared once recorded; the reply is
/// shown. A failed exchange leaves the message kept and ends the chat with an error that
/// says so.
fn exchange(chat: &mut ConversationLoop, unsent: &Unsent, text: &str, session: &str) -> Result<()> {
    let before = chat.turn_count();
    unsent.keep(text, chat.iteration())?;
    match chat.resume(text) {
        Ok(LoopOutcome::Paused { .. }) => {
            unsent.clear()?;
            let turns = chat.turns();
            let reply = turns
                .last()
                .filter(|t| t.role == ConversationRole::Assistant && turns.len() > before + 1);
            if let Some(reply) = reply {
                say(ConversationRole::Assistant, &reply.content)?;
            } else {
                note!(
                    "[the model sent an empty reply: your message is recorded, nothing from the model is]"
                );
            }
            Ok(())
        }
        Ok(other) => anyhow::bail!("the chat loop ended: {other:?}"),
        Err(e) => {
            let e = anyhow::Error::from(e);
            Err(e.context(format!(
                "the exchange failed; your message is kept in session `{session}` and is sent again when you run the same command (--discard-unsent drops it)"
            )))
        }
    }
}

fn paused_note(session: &str, db: &Path) -> String {
    format!(
        "[paused: session `{session}` is saved in {}; run the same command to resume]",
        db.display()
    )
}

/// Runs the chat until end of input, `/quit`, or Ctrl-C.
pub(crate) fn run(args: &ChatArgs) -> Result<ExitCode> {
    let mut chat = build(args)?;
    let note_text = paused_note(&args.session, &args.db);
    // The loop is checkpointed at every pause for the person: Ctrl-C only has to leave. A
    // message in flight was kept before it was sent (`Unsent`) and is sent again at the
    // next start.
    ctrlc::set_handler(move || {
        note!("\n{note_text}");
        std::process::exit(130);
    })
    .context("cannot install the Ctrl-C handler")?;

    let turns = chat.turns();
    if turns.is_empty() {
        outln!(
            "curator chat: session `{}` with {} at {} (/history shows what the model is sent, /quit leaves)",
            args.session,
            args.model,
            crate::session_file::without_password(&args.base_url)
        )?;
    } else {
        outln!("curator chat: resumed session `{}` ({} turns)", args.session, turns.len())?;
        for turn in &turns {
            say(turn.role, &turn.content)?;
        }
    }
    if chat.paused().is_none() {
        // A new session (or one stopped between exchanges): run to the person's step.
        let outcome = chat.run("")?;
        if !outcome.is_paused() {
            anyhow::bail!("the chat loop ended without waiting for you: {outcome:?}");
        }
    }
    let unsent = Unsent::new(args, chat_redacts(args)?)?;
    match unsent.take(chat.iteration())? {
        Some(_) if args.discard_unsent => {
            unsent.clear()?;
            note!("[the message a failed exchange kept was dropped]");
        }
        Some(text) => {
            outln!("you> {text}")?;
            note!("[sent again: the last exchange failed before it was recorded]");
            exchange(&mut chat, &unsent, &text, &args.session)?;
        }
        None => {}
    }
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        out(format_args!("you> "))?;
        std::io::Write::flush(&mut std::io::stdout())?;
        line.clear();
        if stdin.lock().read_line(&mut line)? == 0 {
            outln!()?;
            note!("{}", paused_note(&args.session, &args.db));
            return Ok(ExitCode::SUCCESS);
        }
        // The message as typed, only its line ending removed; commands and blank lines are
        // recognised trimmed.
        let text = line.strip_suffix('\n').unwrap_or(&line);
        let text = text.strip_suffix('\r').unwrap_or(text);
        match text.trim() {
            "" => {}
            "/quit" | "/exit" => {
                note!("{}", paused_note(&args.session, &args.db));
                return Ok(ExitCode::SUCCESS);
            }
            "/history" => {
                let messages = chat.preview(ASSISTANT, "")?;
                outln!(
                    "--- what the model is sent next ({} messages, then your message):",
                    messages.len()
                )?;
                for m in &messages {
                    outln!("[{}] {}", m.role(), m.text())?;
                }
                outln!("---")?;
            }
            _ => exchange(&mut chat, &unsent, text, &args.session)?,
        }
    }
}
