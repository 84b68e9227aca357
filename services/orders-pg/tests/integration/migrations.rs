//! The migration runner on a database already migrated, under a role that may read its records
//! but not create anything in the schema (the service's role on droplets): nothing to apply,
//! no error.

use tokio_postgres::NoTls;

#[tokio::test]
async fn a_role_without_create_on_the_schema_finds_nothing_to_apply() {
    let url = orders_pg::testing::fresh_database().await;
    let (mut client, connection) = tokio_postgres::connect(&url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    assert!(!orders_pg::migrate::run(&mut client).await.expect("the owner migrates").is_empty());
    // PostgreSQL's own role that reads every table and has no CREATE on `public` (PostgreSQL 15+).
    client.batch_execute("SET ROLE pg_read_all_data").await.expect("set role");
    let can_create: bool =
        client.query_one("SELECT has_schema_privilege('public', 'CREATE')", &[]).await.expect("privilege").get(0);
    assert!(!can_create, "the role must lack CREATE for this test to mean anything");
    let applied = orders_pg::migrate::run(&mut client).await.expect("no CREATE needed when nothing is pending");
    assert!(applied.is_empty(), "{applied:?}");
}
