//! Answers on a raw connection, for requests refused before any proxying: a
//! metav1.Status, as the API server and the kubelet answer.

use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::error::StreamError;

/// Writes `err` as a complete HTTP/1.1 response with a Status body and closes.
pub async fn refuse<C: AsyncWrite + Unpin>(
    client: &mut C,
    err: &StreamError,
) -> std::io::Result<()> {
    client.write_all(&refusal(err)).await?;
    client.shutdown().await
}

/// The bytes of that response.
pub fn refusal(err: &StreamError) -> Vec<u8> {
    let code = err.code();
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": err.to_string(),
        "reason": err.reason(),
        "code": code,
    })
    .to_string();
    format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        err.reason(),
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_whole_response_with_a_status() {
        let raw = refusal(&StreamError::TooMany(2));
        let text = String::from_utf8(raw).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 429 "), "{head}");
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        let status: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(status["code"], 429);
        assert_eq!(status["reason"], "TooManyRequests");
    }
}
