//! The one way both HTTP clients make a call: check, write the body, post (retrying what may
//! pass), read the reply; or stream it and put the pieces together. A provider says only
//! what differs ([`Wire`]).

use serde_json::{Map, Value};

use crate::endpoint::Endpoint;
use crate::stream::{self, Delta};
use crate::{ClientError, ModelReply, ModelRequest, Retry, retry};

/// What a provider's client tells the shared call path.
pub(crate) trait Wire {
    /// The provider's name in errors.
    const PROVIDER: &'static str;
    /// The path under `/v1` requests go to.
    const PATH: &'static str;
    /// What puts a stream's events together.
    type Assembly: Assemble;

    /// The server.
    fn endpoint(&self) -> &Endpoint;
    /// How failures that may pass are retried.
    fn retry(&self) -> &Retry;
    /// What a request is refused for before it is sent.
    fn check(&self) -> Result<(), ClientError>;
    /// The request body.
    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ClientError>;
    /// The fields a streamed request adds to its body.
    fn stream_fields(fields: &mut Map<String, Value>);
    /// The reply an answer holds.
    fn reply(value: &Value) -> Result<ModelReply, ClientError>;
}

/// Puts a stream's events together into the answer the provider gives without streaming.
pub(crate) trait Assemble: Default {
    /// Takes one event, reporting what it adds; `Ok(true)` at the stream's closing event.
    fn take(
        &mut self,
        name: Option<&str>,
        data: &str,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<bool, ClientError>;
    /// The answer, or [`ClientError::StreamCut`] when the stream did not reach its end.
    fn finish(self, url: &str) -> Result<Value, ClientError>;
}

/// One call, its reply read whole.
pub(crate) fn complete<W: Wire>(
    client: &W,
    request: &ModelRequest<'_>,
) -> Result<ModelReply, ClientError> {
    client.check()?;
    let body = client.body(request)?;
    let value = retry::post(client.endpoint(), client.retry(), W::PROVIDER, W::PATH, &body)?;
    W::reply(&value)
}

/// One call, its reply streamed to `on_delta` and read whole when the stream ends.
pub(crate) fn stream<W: Wire>(
    client: &W,
    request: &ModelRequest<'_>,
    on_delta: &mut dyn FnMut(&Delta),
) -> Result<ModelReply, ClientError> {
    client.check()?;
    let mut body = client.body(request)?;
    if let Value::Object(fields) = &mut body {
        fields.insert("stream".into(), Value::Bool(true));
        W::stream_fields(fields);
    }
    let endpoint = client.endpoint();
    let mut events = retry::post_stream(endpoint, client.retry(), W::PROVIDER, W::PATH, &body)?;
    let url = endpoint.url(W::PATH);
    let mut assembly = W::Assembly::default();
    stream::read_events(
        &mut *events,
        |e| stream::read_error(W::PROVIDER, &url, endpoint.timeout(), e),
        |event| assembly.take(event.name.as_deref(), &event.data, on_delta),
    )?;
    W::reply(&assembly.finish(&url)?)
}

/// Implements [`ModelClient`](crate::ModelClient) for a [`Wire`] client: `complete` and
/// `stream` by this module's one call path, with the provider's own docs given for each,
/// and `identity` as `"{name} {base URL} {model}"`.
macro_rules! model_client {
    (
        $client:ty, $name:literal,
        complete { $(#[$complete:meta])* }
        stream { $(#[$stream:meta])* }
    ) => {
        impl $crate::ModelClient for $client {
            $(#[$complete])*
            fn complete(
                &self,
                request: &$crate::ModelRequest<'_>,
            ) -> Result<$crate::ModelReply, $crate::ClientError> {
                $crate::wire::complete(self, request)
            }

            $(#[$stream])*
            fn stream(
                &self,
                request: &$crate::ModelRequest<'_>,
                on_delta: &mut dyn FnMut(&$crate::stream::Delta),
            ) -> Result<$crate::ModelReply, $crate::ClientError> {
                $crate::wire::stream(self, request, on_delta)
            }

            fn identity(&self) -> String {
                let base_url = $crate::wire::Wire::endpoint(self).base_url();
                format!(concat!($name, " {} {}"), base_url, self.settings().model)
            }
        }
    };
}

pub(crate) use model_client;
