//! `AsyncModelClient` (feature `tokio`): a model call from async code, on tokio's blocking
//! threads.

use std::future::Future;

use curator_model::Message;
use serde_json::Value;

use crate::ModelClient;
use crate::error::ClientError;
use crate::reply::ModelReply;
use crate::request::ModelRequest;

/// Model calls from async code, for every [`ModelClient`] that is `Clone` (the clients of
/// this module are, cheaply: clones share the endpoint's connections).
///
/// The blocking call runs on tokio's blocking threads, so it never stalls the runtime's own;
/// the future owns what it needs (the messages, the tools, a clone of the client), so it is
/// `Send + 'static` and can be spawned. A future dropped before its end leaves the request
/// running to its end on its blocking thread, its reply unread.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::client::{AsyncModelClient, ClientError, OpenAiClient, Retry};
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// // Nothing listens on port 9 of the loopback interface.
/// let client = OpenAiClient::new("http://127.0.0.1:9", "m").with_retry(Retry::none());
/// let call = tokio::spawn(client.complete_async(vec![Message::user("hi")], None));
/// let err = call.await?.unwrap_err();
/// assert!(matches!(err, ClientError::Connection { attempts: 1, .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AsyncModelClient: ModelClient + Clone + 'static {
    /// Sends `messages` (and `tools`, an OpenAI `tools` array) as
    /// [`complete`](ModelClient::complete) does, on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`complete`](ModelClient::complete); [`ClientError::Join`] when the blocking task
    /// ends without an answer (it panicked, or the runtime shut down).
    fn complete_async(
        &self,
        messages: Vec<Message>,
        tools: Option<Value>,
    ) -> impl Future<Output = Result<ModelReply, ClientError>> + Send + 'static;
}

impl<C: ModelClient + Clone + 'static> AsyncModelClient for C {
    fn complete_async(
        &self,
        messages: Vec<Message>,
        tools: Option<Value>,
    ) -> impl Future<Output = Result<ModelReply, ClientError>> + Send + 'static {
        let client = self.clone();
        async move {
            let call = move || {
                let request =
                    ModelRequest { messages: &messages, tools: tools.as_ref(), cache_key: None };
                client.complete(&request)
            };
            match tokio::task::spawn_blocking(call).await {
                Ok(result) => result,
                Err(e) => Err(ClientError::Join(Box::new(e))),
            }
        }
    }
}
