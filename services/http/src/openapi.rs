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
}
