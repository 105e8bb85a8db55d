//! The service on a SQLite store of its own: who may decide, single use,
//! and what a requester is given.

use std::sync::Arc;

use super::*;
use crate::clarify::sqlite::SqliteStore;

fn approver(id: &str) -> Approver {
    Approver {
        id: id.into(),
        via: "token",
        person: true,
    }
}

/// A service on a SQLite file of its own (`test`), link-holder or not.
fn service(test: &str, link_holder: bool) -> Approvals {
    let dir = std::env::temp_dir().join(format!("tg-approvals-unit-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = SqliteStore::open(&dir.join("c.db")).unwrap();
    let clarify = Arc::new(Clarify::new(
        Arc::new(store),
        None,
        "http://127.0.0.1:1".into(),
        Duration::from_secs(60),
    ));
    Approvals::new(clarify, link_holder)
}

fn binding(caller: Option<&str>) -> Binding {
    Binding {
        tool: "ssh_run".into(),
        server: "web-1".into(),
        command_sha256: sha256_hex("systemctl restart nginx"),
        host_key: "SHA256:abc".into(),
        caller: caller.map(String::from),
        login: Some("deploy@10.0.0.5:22".into()),
        via: None,
        client_approves: false,
    }
}

fn details() -> Details {
    Details {
        summary: "Run a command on web-1".into(),
        fields: Vec::new(),
        why: "a test".into(),
    }
    .code("Command", "systemctl restart nginx")
}

/// Asks; the error the requester gets, and the id in it.
async fn ask(a: &Approvals, b: &Binding) -> (ToolError, String) {
    let e = a
        .request(b, "approval", details(), Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{}", e.message);
    let id = e.details.as_ref().unwrap()["approval"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (e, id)
}

#[tokio::test]
async fn the_requester_gets_an_id_and_nothing_that_decides() {
    let a = service("nothing", false);
    let (e, id) = ask(&a, &binding(Some("agent"))).await;
    let body = e.body().to_string();
    assert!(!body.contains("http"), "no link: {body}");
    assert!(!body.contains("answer"), "{body}");
    assert_eq!(e.details.unwrap()["approval"]["target"], "web-1");
    // The clarification routes' answer refuses it: only approvers decide.
    let r = a.clarify().answer(&id, "Approve".into(), Some(0)).await;
    assert!(matches!(r, Ok(Err(Refusal::Approval(_)))), "{r:?}");
    let r = a.clarify().cancel(&id).await;
    assert!(matches!(r, Ok(Err(Refusal::Approval(_)))), "{r:?}");
    // Without the link-holder setting no capability decides anything.
    let e = a
        .by_link(&id, &"0".repeat(64), Some(true))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden);
    let e = a
        .redeem(&id, &binding(Some("agent")), "approval")
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{}", e.message);
}

#[tokio::test]
async fn an_approval_is_the_callers_own_and_names_its_approver() {
    let a = service("caller", false);
    let b = binding(Some("arn:aws:iam::1:user/alice"));
    let (_, id) = ask(&a, &b).await;
    a.decide(&id, true, &approver("token:bob")).await.unwrap();
    for other in [Some("arn:aws:iam::1:user/bob"), None] {
        let want = Binding {
            caller: other.map(String::from),
            ..b.clone()
        };
        let e = a.redeem(&id, &want, "approval").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(e.message.contains("another caller"), "{}", e.message);
    }
    // Refusals do not use it up: its own caller still can, once.
    let receipt = a.redeem(&id, &b, "approval").await.unwrap();
    assert_eq!(receipt.id, id);
    assert_eq!(receipt.approver, "token:bob");
    let e = a.redeem(&id, &b, "approval").await.unwrap_err();
    assert!(e.message.contains("already been used"), "{}", e.message);
}

#[tokio::test]
async fn an_approval_is_for_the_login_approvers_were_shown() {
    let a = service("login", false);
    let b = binding(None);
    let (_, id) = ask(&a, &b).await;
    a.decide(&id, true, &approver("token:ops")).await.unwrap();
    let as_root = Binding {
        login: Some("root@10.0.0.5:22".into()),
        ..b.clone()
    };
    let e = a.redeem(&id, &as_root, "approval").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden);
    assert!(
        e.message.contains("now logs in as root@10.0.0.5:22"),
        "{}",
        e.message
    );
    a.redeem(&id, &b, "approval").await.unwrap();
}

#[tokio::test]
async fn the_caller_cannot_approve_its_own_call() {
    let a = service("self", false);
    let (_, id) = ask(&a, &binding(Some("alice"))).await;
    let e = a
        .decide(&id, true, &approver("token:alice"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden, "{}", e.message);
    assert!(
        e.message.contains("cannot approve its own call"),
        "{}",
        e.message
    );
    // Someone else can; a second decision is a conflict naming the first.
    a.decide(&id, false, &approver("jwt:carol")).await.unwrap();
    let e = a
        .decide(&id, true, &approver("jwt:dave"))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict);
    assert_eq!(e.message, "This approval is already rejected");
    let e = a
        .redeem(&id, &binding(Some("alice")), "approval")
        .await
        .unwrap_err();
    assert!(e.message.contains("rejected by jwt:carol"), "{}", e.message);
}

/// A channel that keeps what it is told.
struct Capture(
    crate::clarify::notify::Listener,
    std::sync::Mutex<Vec<Value>>,
);

impl crate::clarify::notify::Channel for Capture {
    fn listener(&self) -> &crate::clarify::notify::Listener {
        &self.0
    }
    fn send<'a>(
        &'a self,
        _: crate::clarify::notify::Event,
        body: &'a Value,
    ) -> crate::clarify::notify::Sent<'a> {
        self.1.lock().unwrap().push(body.clone());
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_link_decides_only_in_link_holder_mode_and_only_with_its_capability() {
    use crate::clarify::notify::{Event, Listener, Notifier};
    let dir = std::env::temp_dir().join(format!("tg-approvals-unit-{}-link", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let capture = Arc::new(Capture(
        Listener {
            name: "capture".into(),
            events: Event::ALL.to_vec(),
        },
        Default::default(),
    ));
    let clarify = Clarify::new(
        Arc::new(SqliteStore::open(&dir.join("c.db")).unwrap()),
        None,
        "https://t.example".into(),
        Duration::from_secs(60),
    )
    .with_notifier(Notifier::new(vec![capture.clone()], None));
    let a = Approvals::new(Arc::new(clarify), true);
    let b = binding(Some("agent"));
    let (e, id) = ask(&a, &b).await;
    let told = capture.1.lock().unwrap()[0].clone();
    let url = told["approval_url"].as_str().unwrap().to_owned();
    let cap = url.split_once("#cap=").unwrap().1.to_owned();
    assert_eq!(url, format!("https://t.example/inbox/{id}#cap={cap}"));
    assert!(
        !e.body().to_string().contains(&cap),
        "the requester never sees it"
    );
    let row = a.clarify().approval(&id).await.unwrap().unwrap();
    assert_eq!(row.cap_sha256.as_deref(), Some(sha256_hex(&cap).as_str()));
    // A wrong capability, or the right one for another approval, decides nothing.
    let e = a
        .by_link(&id, &"0".repeat(64), Some(true))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden);
    let (_, other) = ask(&a, &b).await;
    assert!(a.by_link(&other, &cap, Some(true)).await.is_err());
    let v = a.by_link(&id, &cap, None).await.unwrap();
    assert_eq!(v["status"], "pending");
    let v = a.by_link(&id, &cap, Some(true)).await.unwrap();
    assert_eq!(v["approver"], LINK_HOLDER);
    let r = a.redeem(&id, &b, "approval").await.unwrap();
    assert_eq!(r.approver, LINK_HOLDER);
    // Later events link the inbox, never the capability.
    let later = capture.1.lock().unwrap().clone();
    assert!(later.len() >= 2);
    for body in &later[1..] {
        assert!(!body.to_string().contains(&cap), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_uses_of_one_approval_run_once() {
    let a = Arc::new(service("race", false));
    let b = binding(None);
    let (_, id) = ask(&a, &b).await;
    a.decide(&id, true, &approver("token:ops")).await.unwrap();
    let tries: Vec<_> = (0..16)
        .map(|_| {
            let (a, id, b) = (a.clone(), id.clone(), b.clone());
            tokio::spawn(async move { a.redeem(&id, &b, "approval").await })
        })
        .collect();
    let mut ran = 0;
    for t in tries {
        match t.await.unwrap() {
            Ok(_) => ran += 1,
            Err(e) => assert!(e.message.contains("already been used"), "{}", e.message),
        }
    }
    assert_eq!(ran, 1, "sixteen racing uses of one approval");
}

#[tokio::test]
async fn listings_separate_approvals_from_questions() {
    let a = service("list", false);
    let (_, id) = ask(&a, &binding(None)).await;
    let q = a
        .clarify()
        .ask("Which region?".into(), vec![], None)
        .await
        .unwrap();
    let approvals = a.list(true, true).await.unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["id"], id);
    assert_eq!(
        approvals[0]["details"][0]["text"],
        "systemctl restart nginx"
    );
    let questions = a.list(false, true).await.unwrap();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0]["id"], q.id);
    // `/metrics` counts them in the store, as the listings see them.
    let waiting = a.clarify().waiting().await.unwrap();
    assert_eq!((waiting.questions, waiting.approvals), (1, 1));
    a.decide(&id, true, &approver("token:ops")).await.unwrap();
    let waiting = a.clarify().waiting().await.unwrap();
    assert_eq!((waiting.questions, waiting.approvals), (1, 0));
    assert!(a.list(true, true).await.unwrap().is_empty());
    assert_eq!(a.list(true, false).await.unwrap()[0]["status"], "approved");
}

#[tokio::test]
async fn a_binding_rewritten_after_the_decision_is_refused() {
    let a = service("swap", false);
    let b = binding(None);
    let (_, id) = ask(&a, &b).await;
    a.decide(&id, true, &approver("token:ops")).await.unwrap();
    // What a function that may write bindings, never decisions, could do:
    // swap the approved command for another after the decision.
    let evil = Binding {
        command_sha256: sha256_hex("rm -rf /"),
        ..b.clone()
    };
    let db = std::env::temp_dir().join(format!(
        "tg-approvals-unit-{}-swap/c.db",
        std::process::id()
    ));
    rusqlite::Connection::open(db)
        .unwrap()
        .execute(
            "UPDATE approvals SET binding = ?1 WHERE id = ?2",
            rusqlite::params![serde_json::to_string(&evil).unwrap(), id],
        )
        .unwrap();
    let e = a.redeem(&id, &evil, "approval").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden);
    assert!(
        e.message.contains("changed after it was decided"),
        "{}",
        e.message
    );
}
