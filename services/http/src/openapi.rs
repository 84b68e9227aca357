//! The OpenAPI 3 description served at `/openapi.json`, kept as a plain JSON file beside the code
//! so it reads like documentation; a test checks that it names every route of the router.

pub const DOCUMENT: &str = include_str!("../openapi.json");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_valid_json_and_describes_every_route() {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).expect("openapi.json parses");
        assert_eq!(doc["openapi"], "3.0.3");
        for (path, method) in [
            ("/orders", "post"),
            ("/orders/{id}", "get"),
            ("/orders/{id}/status", "patch"),
            ("/customers/{customer_id}/orders", "get"),
            ("/products/{product_id}/orders", "get"),
            ("/healthz", "get"),
            ("/readyz", "get"),
            ("/metrics", "get"),
            ("/diagnostics", "get"),
            ("/openapi.json", "get"),
        ] {
            assert!(doc["paths"][path][method].is_object(), "{method} {path} is described");
        }
    }

    #[test]
    fn describes_the_write_headers_and_the_minimal_answers() {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).expect("openapi.json parses");
        let parameters = &doc["components"]["parameters"];
        assert_eq!(parameters["Prefer"]["name"], "Prefer");
        assert_eq!(parameters["IdempotencyKey"]["name"], "Idempotency-Key");
        let refs = |path: &str, method: &str| doc["paths"][path][method]["parameters"].to_string();
        assert!(refs("/orders", "post").contains("IdempotencyKey") && refs("/orders", "post").contains("Prefer"));
        assert!(refs("/orders/{id}/status", "patch").contains("Prefer"));
        let patch = &doc["paths"]["/orders/{id}/status"]["patch"]["responses"];
        assert!(patch["204"]["headers"]["Preference-Applied"].is_object(), "204 with Preference-Applied");
        assert!(doc["paths"]["/orders"]["post"]["responses"]["503"]["headers"]["Retry-After"].is_object());
    }
}
