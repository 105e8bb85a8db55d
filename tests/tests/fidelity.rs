//! CPython fidelity on `toolgate serve`: the public corpus
//! (`tests/fidelity/corpus.json`) through python.execute, compared with
//! CPython 3.13's stdout case by case (`toolgate_e2e::fidelity`).

use serde_json::json;
use toolgate_e2e::Server;
use toolgate_e2e::timing::machine_share;

#[test]
fn the_corpus_prints_what_cpython_prints_on_serve() {
    let _machine = machine_share();
    let server = Server::start(&[]);
    toolgate_e2e::fidelity::check(
        "serve",
        |code| {
            let r = server.post_json("/tools/python.execute", &json!({ "code": code }));
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            r.json()
        },
        2,
    );
}
