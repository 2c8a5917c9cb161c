//! The api's side of the Lambda runtime: an API Gateway HTTP API (payload v2) event in, its response out; or a
//! batch of the `rollouts` queue in, its partial batch response out ([`Invocation`]).
//!
//! `lambda_http::run` does the same, but it passes every answer's body through encoding_rs (decoding it by the
//! `Content-Type`'s charset), which links every legacy encoding's decoder and tables into the zip. The api's
//! answers are UTF-8 JSON or empty, and [`ApiService::handle`] already has them as text, so the response is built
//! here, as lambda_http builds it for payload v2: status, headers, `Set-Cookie` moved to `cookies`, a body that is
//! not UTF-8 sent base64-encoded.

use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use lambda_http::http::header::{HeaderName, HeaderValue, SET_COOKIE};
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Context, LambdaEvent, RequestExt};

use crate::router::ApiService;

/// What invokes the api function: API Gateway with a request, or the `rollouts` queue's event source
/// mapping with a batch (`Records[].eventSource` is `aws:sqs`).
#[derive(Debug)]
pub enum Invocation {
    Http(Box<LambdaRequest>),
    Rollouts(aws_lambda_events::sqs::SqsEvent),
}

/// What the api answers: the HTTP API response, or the `rollouts` batch's partial batch response; each
/// serialized as itself (untagged).
#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub enum Answer {
    Http(Box<ApiGatewayV2httpResponse>),
    Rollouts(aws_lambda_events::sqs::SqsBatchResponse),
}

impl Invocation {
    /// Tells the two apart by the event's shape, then reads the event once, straight into the one it is (a
    /// `serde_json::Value` in between would build a tree of maps and strings per request only to convert it,
    /// and link each event's deserialization twice). `Err`: neither (the runtime answers it as an error).
    pub fn parse(payload: &str) -> Result<Self, serde_json::Error> {
        /// The event's `Records[].eventSource`, every other field skipped unread.
        #[derive(serde::Deserialize)]
        struct Shape {
            #[serde(rename = "Records")]
            records: Option<Vec<Source>>,
        }
        #[derive(serde::Deserialize)]
        struct Source {
            #[serde(rename = "eventSource")]
            event_source: Option<String>,
        }
        let shape: Shape = serde_json::from_str(payload)?;
        let source = shape
            .records
            .as_deref()
            .and_then(<[Source]>::first)
            .and_then(|r| r.event_source.as_deref());
        if source == Some("aws:sqs") {
            Ok(Self::Rollouts(serde_json::from_str(payload)?))
        } else {
            Ok(Self::Http(Box::new(serde_json::from_str(payload)?)))
        }
    }
}

impl ApiService {
    /// Answers one invocation: what `main` gives the Lambda runtime.
    pub async fn invoke(&self, event: LambdaEvent<LambdaRequest>) -> ApiGatewayV2httpResponse {
        let LambdaEvent { payload, context } = event;
        response(self.handle(request(payload, context)).await)
    }

    /// Answers any invocation (the event's JSON text as the runtime received it): an HTTP API request's
    /// response, or a `rollouts` batch's partial batch response (`batchItemFailures`, the mapping's
    /// `ReportBatchItemFailures`).
    pub async fn invoke_any(
        &self,
        event: LambdaEvent<Box<serde_json::value::RawValue>>,
    ) -> Result<Answer, serde_json::Error> {
        let LambdaEvent { payload, context } = event;
        Ok(match Invocation::parse(payload.get())? {
            Invocation::Http(req) => Answer::Http(Box::new(
                self.invoke(LambdaEvent {
                    payload: *req,
                    context,
                })
                .await,
            )),
            Invocation::Rollouts(batch) => Answer::Rollouts(self.drain(batch).await),
        })
    }
}

/// The HTTP request of an event, with the invocation's context as lambda_http's extensions (the request id,
/// the authorizer's claims) and its X-Ray trace id as `x-amzn-trace-id`, as lambda_http passes them.
fn request(payload: LambdaRequest, context: Context) -> lambda_http::Request {
    let mut req = lambda_http::Request::from(payload);
    if let Some(trace) = context
        .xray_trace_id
        .as_deref()
        .and_then(|t| HeaderValue::from_str(t).ok())
    {
        req.headers_mut()
            .insert(HeaderName::from_static("x-amzn-trace-id"), trace);
    }
    req.with_lambda_context(context)
}

/// The payload-v2 response: API Gateway takes cookies in `cookies`, not as `Set-Cookie` headers, and joins
/// repeated headers itself (no `multiValueHeaders`).
fn response(resp: lambda_http::Response<Body>) -> ApiGatewayV2httpResponse {
    let (parts, body) = resp.into_parts();
    let mut headers = parts.headers;
    let cookies = headers
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap_or_default().to_owned())
        .collect();
    headers.remove(SET_COOKIE);
    let mut out = ApiGatewayV2httpResponse::default();
    out.status_code = i64::from(parts.status.as_u16());
    out.is_base64_encoded = matches!(body, Body::Binary(_));
    out.body = match body {
        Body::Empty => None,
        b => Some(b),
    };
    out.cookies = cookies;
    out.headers = headers;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
    use lambda_http::http::StatusCode;

    #[test]
    fn a_json_answer_is_text_with_its_headers_and_status() {
        let resp = lambda_http::Response::builder()
            .status(StatusCode::ACCEPTED)
            .header("content-type", "application/json")
            .header("location", "/v1/operations/op-1")
            .body(Body::Text(r#"{"id":"op-1"}"#.into()))
            .unwrap();
        let out = response(resp);
        assert_eq!(out.status_code, 202);
        assert!(!out.is_base64_encoded);
        assert_eq!(out.body, Some(Body::Text(r#"{"id":"op-1"}"#.into())));
        assert_eq!(out.headers["content-type"], "application/json");
        assert_eq!(out.headers["location"], "/v1/operations/op-1");
        assert!(out.cookies.is_empty());
        // The serialized form is what API Gateway reads.
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["statusCode"], 202);
        assert_eq!(json["isBase64Encoded"], false);
        assert_eq!(json["body"], r#"{"id":"op-1"}"#);
    }

    #[test]
    fn an_empty_answer_has_no_body_and_bytes_go_base64() {
        let empty = response(
            lambda_http::Response::builder()
                .status(StatusCode::NO_CONTENT)
                .body(Body::Empty)
                .unwrap(),
        );
        assert_eq!(empty.status_code, 204);
        assert_eq!(empty.body, None);
        assert!(serde_json::to_value(&empty).unwrap().get("body").is_none());

        let bytes = response(lambda_http::Response::new(Body::Binary(vec![0xff, 0xfe])));
        assert!(bytes.is_base64_encoded);
        assert_eq!(serde_json::to_value(&bytes).unwrap()["body"], "//4=");
    }

    #[test]
    fn an_sqs_batch_is_the_rollouts_queues_and_anything_else_an_http_request() {
        let sqs = serde_json::json!({"Records": [{
            "messageId": "m-1", "receiptHandle": "rh", "body": "{}", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:eu-west-1:000000000000:strato-rollouts.fifo",
            "attributes": {"MessageGroupId": "ro-1", "ApproximateReceiveCount": "1"},
            "messageAttributes": {}, "md5OfBody": "", "awsRegion": "eu-west-1"
        }]});
        let Ok(Invocation::Rollouts(batch)) = Invocation::parse(&sqs.to_string()) else {
            panic!("an SQS batch")
        };
        assert_eq!(batch.records[0].body.as_deref(), Some("{}"));

        let mut event = ApiGatewayV2httpRequest::default();
        event.raw_path = Some("/v1/clusters".into());
        event.request_context.http.method = lambda_http::http::Method::GET;
        let http = serde_json::to_string(&event).unwrap();
        let Ok(Invocation::Http(req)) = Invocation::parse(&http) else {
            panic!("an HTTP API request")
        };
        let req = lambda_http::Request::from(*req);
        assert_eq!(req.uri().path(), "/v1/clusters");
        assert_eq!(req.method(), lambda_http::http::Method::GET);
        assert!(Invocation::parse("\"nonsense\"").is_err());
        assert!(Invocation::parse("{\"Records\": 7}").is_err());
    }

    #[test]
    fn an_answer_is_serialized_as_the_response_it_holds() {
        let http = Answer::Http(Box::new(response(lambda_http::Response::new(Body::Text(
            "{}".into(),
        )))));
        let json = serde_json::to_value(&http).unwrap();
        assert_eq!(json["statusCode"], 200);
        assert_eq!(json["body"], "{}");
        let mut batch = aws_lambda_events::sqs::SqsBatchResponse::default();
        batch.add_failure("m-1".to_owned());
        let json = serde_json::to_value(Answer::Rollouts(batch)).unwrap();
        assert_eq!(json["batchItemFailures"][0]["itemIdentifier"], "m-1");
        assert!(json.get("statusCode").is_none());
    }

    #[test]
    fn set_cookie_headers_become_cookies() {
        let resp = lambda_http::Response::builder()
            .header("set-cookie", "a=1")
            .header("set-cookie", "b=2")
            .body(Body::Empty)
            .unwrap();
        let out = response(resp);
        assert_eq!(out.cookies, vec!["a=1".to_owned(), "b=2".to_owned()]);
        assert!(out.headers.get(SET_COOKIE).is_none());
    }

    #[test]
    fn the_request_carries_the_invocation_context_and_trace() {
        let mut event = ApiGatewayV2httpRequest::default();
        event.raw_path = Some("/v1/clusters".into());
        event.request_context.http.method = lambda_http::http::Method::POST;
        let mut context = Context::default();
        context.request_id = "req-7".into();
        context.xray_trace_id = Some("Root=1-5759e988-bd862e3fe1be46a994272793".into());
        let req = request(LambdaRequest::ApiGatewayV2(event), context);
        assert_eq!(req.method(), lambda_http::http::Method::POST);
        assert_eq!(req.uri().path(), "/v1/clusters");
        assert_eq!(
            req.headers()["x-amzn-trace-id"],
            "Root=1-5759e988-bd862e3fe1be46a994272793"
        );
        assert_eq!(
            req.lambda_context_ref().map(|c| c.request_id.as_str()),
            Some("req-7")
        );
    }
}
