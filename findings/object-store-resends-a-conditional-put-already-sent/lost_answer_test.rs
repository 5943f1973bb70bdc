//! A conditional PUT (`PutMode::Create`, `If-None-Match: *`) whose request was sent in full must not
//! be sent again when the connection closes before the answer: the store may have applied it.
//!
//! The test serves S3 itself on 127.0.0.1: it reads the first conditional PUT whole and closes the
//! connection without answering (the answer lost); any later PUT of the key gets 412 Precondition
//! Failed, as S3 answers once the object exists. Against object_store 0.13.2 the first test fails:
//! the PUT is sent twice and the caller is told `AlreadyExists` for its own object.

use std::sync::{Arc, Mutex};

use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path;
use object_store::{Error, ObjectStore, PutMode, PutPayload, PutResult, RetryConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PRECONDITION_FAILED: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
    <Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified \
    did not hold</Message><Condition>If-None-Match</Condition></Error>";

/// One request as the server read it: its request line, its `If-None-Match` and its body's length.
#[derive(Debug)]
struct Seen {
    line: String,
    if_none_match: Option<String>,
    body_len: usize,
}

/// Read one HTTP/1.1 request whole (head, then `Content-Length` bytes of body).
async fn read_request(socket: &mut TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    };
    let body_len: usize = header("content-length").map_or(0, |v| v.parse().unwrap());
    while data.len() < head_end + body_len {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&chunk[..n]);
    }
    Some(Seen {
        line: head.lines().next().unwrap_or_default().to_string(),
        if_none_match: header("if-none-match"),
        body_len,
    })
}

/// Serve S3 on 127.0.0.1: the first request is read whole and its connection closed unanswered;
/// later ones get 412. Returns the endpoint and every request the server read, in order.
async fn start_server() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&requests);
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let first = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(request);
                    seen.len() == 1
                };
                if first {
                    return; // the request was read whole; the connection closes without an answer
                }
                let answer = format!(
                    "HTTP/1.1 412 Precondition Failed\r\nContent-Type: application/xml\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{PRECONDITION_FAILED}",
                    PRECONDITION_FAILED.len()
                );
                socket.write_all(answer.as_bytes()).await.unwrap();
                socket.shutdown().await.unwrap();
            });
        }
    });
    (endpoint, requests)
}

/// `put_opts(PutMode::Create)` of `lock` through the server: what it returned, and the requests the
/// server read (each recorded before its connection is answered or closed).
async fn create_through_a_lost_answer(retry: RetryConfig) -> (Result<PutResult, Error>, Vec<Seen>) {
    let (endpoint, requests) = start_server().await;
    let store = AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_bucket_name("repro")
        .with_region("us-east-1")
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .with_retry(retry)
        .build()
        .unwrap();
    let payload = PutPayload::from_static(b"writer-1");
    let result = store
        .put_opts(&Path::from("lock"), payload, PutMode::Create.into())
        .await;
    let seen = std::mem::take(&mut *requests.lock().unwrap());
    (result, seen)
}

#[tokio::test]
async fn a_conditional_put_sent_in_full_is_not_sent_again() {
    let (result, requests) = create_through_a_lost_answer(RetryConfig::default()).await;
    assert!(
        !requests.is_empty(),
        "the server read no request; put_opts returned {result:?}"
    );
    assert!(
        requests[0].line.starts_with("PUT /repro/lock "),
        "{requests:?}"
    );
    assert_eq!(
        requests[0].if_none_match.as_deref(),
        Some("*"),
        "{requests:?}"
    );
    assert_eq!(
        requests[0].body_len, 8,
        "the first PUT was not read whole: {requests:?}"
    );
    assert_eq!(
        requests.len(),
        1,
        "the conditional PUT, read whole by the server, was sent {} times: {requests:?}; put_opts returned {result:?}",
        requests.len()
    );
    assert!(
        !matches!(result, Err(Error::AlreadyExists { .. })),
        "the caller was told its own object already exists: {result:?}"
    );
}

/// The control: with retries off, the same server reads one PUT, and the caller gets an error that
/// leaves the outcome open (not `AlreadyExists`). This passes today.
#[tokio::test]
async fn with_retries_off_the_put_is_sent_once_and_the_outcome_left_open() {
    let retry = RetryConfig {
        max_retries: 0,
        ..RetryConfig::default()
    };
    let (result, requests) = create_through_a_lost_answer(retry).await;
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(
        matches!(result, Err(ref e) if !matches!(e, Error::AlreadyExists { .. })),
        "{result:?}"
    );
}
