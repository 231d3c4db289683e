//! A loopback HTTP server that speaks OpenAI chat completions (and any other JSON API through
//! [`Reply::Full`]), for testing HTTP agent steps, model clients and `curator chat` against a
//! real socket.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// How the server answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A chat completion whose message content is this text.
    Text(String),
    /// A status and a body, as given.
    Status(u16, String),
    /// A status, headers and a body, as given.
    Full {
        /// The status.
        status: u16,
        /// Headers sent besides `Content-Type`, `Content-Length` and `Connection`.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// Waits this long, then answers with the text (a slow model).
    Slow(Duration, String),
    /// Announces a long body, sends the start of a completion, then closes the connection.
    BrokenOff,
    /// Server-sent events (`text/event-stream`, chunked): each event's text (`data: {...}`,
    /// or `event: name\ndata: {...}`) is sent and flushed on its own, followed by the blank
    /// line that ends it, then the body ends.
    Events(Vec<String>),
    /// The events, then the connection closes without ending the body (a stream cut).
    EventsCut(Vec<String>),
    /// The events, then nothing for this long before the connection closes (a stream that
    /// never ends).
    EventsHang(Vec<String>, Duration),
}

/// The function that picks the reply to a request body (the parsed JSON) and its number.
pub type Responder = dyn Fn(usize, &Value) -> Reply + Send + Sync;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request line's target (`/v1/chat/completions`).
    pub path: String,
    /// The headers, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body, parsed (`Null` when it is not JSON).
    pub body: Value,
}

impl Received {
    /// The value of the header `name` (compared without case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A running server; requests received are kept, in order.
#[derive(Debug)]
pub struct ChatServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Received>>>,
    _thread: JoinHandle<()>,
}

impl ChatServer {
    /// Starts a server on a free loopback port, answering each request with `respond`.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub fn start(respond: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("local addr: {e}"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&requests);
        let respond: Arc<Responder> = Arc::new(respond);
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                let respond = Arc::clone(&respond);
                std::thread::spawn(move || serve(stream, &kept, &*respond));
            }
        });
        Self { addr, requests, _thread: thread }
    }

    /// A server that answers every request with `"{prefix} {n}"` (n counting from 1) and
    /// echoes the number of messages it was sent: `"{prefix} {n} ({m} messages)"`.
    pub fn counting(prefix: &'static str) -> Self {
        Self::start(move |n, body| {
            let m = body["messages"].as_array().map_or(0, Vec::len);
            Reply::Text(format!("{prefix} {n} ({m} messages)"))
        })
    }

    /// The base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.received().into_iter().map(|r| r.body).collect()
    }

    /// The requests received so far, with their paths and headers.
    pub fn received(&self) -> Vec<Received> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

fn serve(stream: TcpStream, kept: &Mutex<Vec<Received>>, respond: &Responder) {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = {
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.push(Received { path, headers, body: body.clone() });
        kept.len()
    };
    let mut stream = reader.into_inner();
    let completion = |text: &str| {
        json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "model": body["model"],
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text}}]})
        .to_string()
    };
    let (status, extra, payload) = match respond(n, &body) {
        Reply::Text(text) => (200, Vec::new(), completion(&text)),
        Reply::Status(status, body) => (status, Vec::new(), body),
        Reply::Full { status, headers, body } => (status, headers, body),
        Reply::Slow(wait, text) => {
            std::thread::sleep(wait);
            (200, Vec::new(), completion(&text))
        }
        Reply::Events(events) => return send_events(&mut stream, &events, None, true),
        Reply::EventsCut(events) => return send_events(&mut stream, &events, None, false),
        Reply::EventsHang(events, wait) => {
            return send_events(&mut stream, &events, Some(wait), false);
        }
        Reply::BrokenOff => {
            let start = &completion("cut")[..20];
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{start}"
            );
            let _ = stream.flush();
            return;
        }
    };
    let extra = extra.iter().fold(String::new(), |mut out, (name, value)| {
        let _ = write!(out, "{name}: {value}\r\n");
        out
    });
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{payload}",
        payload.len()
    );
    let _ = stream.flush();
}

/// Writes `events` as a chunked `text/event-stream` body, one chunk per event, flushed; then
/// waits `hang`, and ends the body when `end` (else closes the connection mid-body).
fn send_events(stream: &mut TcpStream, events: &[String], hang: Option<Duration>, end: bool) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    for event in events {
        let chunk = format!("{event}\n\n");
        let _ = write!(stream, "{:x}\r\n{chunk}\r\n", chunk.len());
        let _ = stream.flush();
        std::thread::sleep(Duration::from_millis(2));
    }
    if let Some(hang) = hang {
        std::thread::sleep(hang);
    }
    if end {
        let _ = write!(stream, "0\r\n\r\n");
    }
    let _ = stream.flush();
}
