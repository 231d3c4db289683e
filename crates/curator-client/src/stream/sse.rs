//! Server-sent events, read line by line as they arrive.

use std::io::BufRead;

/// One event: its `event:` name (when it has one) and its `data:` lines joined by `\n`.
#[derive(Debug, Default)]
pub(crate) struct Event {
    pub(crate) name: Option<String>,
    pub(crate) data: String,
}

/// Reads events from `reader` and hands each to `on_event`, until the stream ends or
/// `on_event` says it is done (`Ok(true)`). Comments (`:`), `id:` and `retry:` lines are
/// skipped.
///
/// # Errors
///
/// The reader's error (the connection broke, a timeout) as `on_io` makes it, or
/// `on_event`'s.
pub(crate) fn read_events<E>(
    reader: &mut dyn BufRead,
    on_io: impl Fn(std::io::Error) -> E,
    mut on_event: impl FnMut(Event) -> Result<bool, E>,
) -> Result<(), E> {
    let mut event = Event::default();
    let mut has_data = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(&on_io)? == 0 {
            // The stream ended; an event not closed by a blank line is still one.
            if has_data {
                on_event(event)?;
            }
            return Ok(());
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.is_empty() {
            if has_data && on_event(std::mem::take(&mut event))? {
                return Ok(());
            }
            event = Event::default();
            has_data = false;
            continue;
        }
        let (field, value) = text.split_once(':').unwrap_or((text, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event.name = Some(value.to_owned()),
            "data" => {
                if has_data {
                    event.data.push('\n');
                }
                event.data.push_str(value);
                has_data = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Event, read_events};

    fn events(text: &str) -> Vec<(Option<String>, String)> {
        let mut out = Vec::new();
        let mut reader = text.as_bytes();
        read_events(
            &mut reader,
            |e| e,
            |Event { name, data }| {
                out.push((name, data));
                Ok(false)
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn events_are_read_with_their_names_and_joined_data() {
        let got = events(
            ": ping\n\nevent: a\ndata: {\"x\":1}\n\ndata:two\ndata: lines\r\n\r\nid: 7\ndata: last",
        );
        assert_eq!(
            got,
            [
                (Some("a".to_owned()), "{\"x\":1}".to_owned()),
                (None, "two\nlines".to_owned()),
                (None, "last".to_owned()),
            ]
        );
    }
}
