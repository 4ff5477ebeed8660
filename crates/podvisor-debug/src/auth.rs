//! Bearer-token check for the debug routes.

use actix_web::HttpRequest;
use actix_web::http::header::AUTHORIZATION;

/// `true` if no token is configured or the request carries it.
pub fn authorized(req: &HttpRequest, token: Option<&str>) -> bool {
    let Some(token) = token else { return true };
    let header = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    bearer_matches(header, token)
}

/// Whether an `Authorization` header's value is `Bearer <token>`.
pub fn bearer_matches(header: Option<&str>, token: &str) -> bool {
    match header.and_then(|v| v.strip_prefix("Bearer ")) {
        Some(given) => constant_time_eq(given.as_bytes(), token.as_bytes()),
        None => false,
    }
}

/// Compares without an early exit, so response timing does not reveal how much of a
/// guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn token_is_required_only_when_configured() {
        let none = TestRequest::default().to_http_request();
        assert!(authorized(&none, None));
        assert!(!authorized(&none, Some("s3cret")));
        let good = TestRequest::default()
            .insert_header((AUTHORIZATION, "Bearer s3cret"))
            .to_http_request();
        assert!(authorized(&good, Some("s3cret")));
        let bad = TestRequest::default()
            .insert_header((AUTHORIZATION, "Bearer s3cres"))
            .to_http_request();
        assert!(!authorized(&bad, Some("s3cret")));
        let basic = TestRequest::default()
            .insert_header((AUTHORIZATION, "Basic s3cret"))
            .to_http_request();
        assert!(!authorized(&basic, Some("s3cret")));
    }
}
