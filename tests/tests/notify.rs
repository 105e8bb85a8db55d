//! Notifications for clarify (docs/notifications.md), with real receivers
//! on loopback: a webhook receiver that verifies the signature with the
//! snippet docs/notifications.md shows and refuses a replay, a Slack
//! receiver whose payloads are type-checked against Slack's published Block
//! Kit types (`@slack/types`, with tsc: no Slack server can run here), and
//! SNS through moto, which delivers to an HTTP subscription.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::peer::{moto, run_ok, tools_dir};
use toolgate_e2e::stepfunctions::{AWS, boto};
use toolgate_e2e::webhook::{events, receiver, seen, wait_for};
use toolgate_e2e::{Server, support, workspace};

const SECRET: &str = "a-webhook-secret-of-32-characters";

/// Type-checks Slack messages against `@slack/types` with tsc; the errors.
fn slack_type_errors(messages: &[Value]) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("toolgate-slack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let types = tools_dir().join("node_modules/@slack/types");
    let mut ts = format!(
        "import type {{ KnownBlock }} from '{}';\n\
         interface IncomingWebhookMessage {{ text: string; blocks: KnownBlock[] }}\n",
        types.display()
    );
    for (i, m) in messages.iter().enumerate() {
        ts.push_str(&format!(
            "export const m{i}: IncomingWebhookMessage = {m};\n"
        ));
    }
    let file = dir.join("check.ts");
    std::fs::write(&file, ts).unwrap();
    let out = Command::new(tools_dir().join("node_modules/.bin/tsc"))
        .args([
            "--noEmit",
            "--strict",
            "--skipLibCheck",
            "--module",
            "nodenext",
        ])
        .args(["--moduleResolution", "nodenext", "--target", "es2022"])
        .arg(&file)
        .output()
        .expect("run tsc");
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// `[[clarify.notify]]` webhooks, each a name and the receiver's route it
/// posts to, hearing of `created` only.
fn webhooks(base: &str, channels: &[(&str, &str)]) -> String {
    channels
        .iter()
        .map(|(name, route)| {
            format!(
                "[[clarify.notify]]\nkind = \"webhook\"\nname = \"{name}\"\nurl = \"{base}/{route}\"\n\
                 secret = \"{SECRET}\"\nevents = [\"created\"]\n\n"
            )
        })
        .collect()
}

fn config(dir: &Path, base: &str) -> PathBuf {
    let path = dir.join("toolgate.toml");
    std::fs::write(&path, webhooks(base, &[("down", "down"), ("slow", "slow")])).unwrap();
    path
}

#[test]
fn webhook_and_slack_hear_of_each_event_signed_once_and_after_the_answer() {
    let (_rx, base) = receiver(SECRET);
    let dir = std::env::temp_dir().join(format!("toolgate-notify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = config(&dir, &base);
    let hook = format!("{base}/hook");
    let slack = format!("{base}/slack");
    let s = Server::start(&[
        ("TOOLGATE_CONFIG", cfg.to_str().unwrap()),
        ("TOOLGATE_CLARIFY_WEBHOOK_URL", &hook),
        ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", SECRET),
        ("TOOLGATE_CLARIFY_SLACK_URL", &slack),
    ]);

    let r = s.post_json(
        "/tools/clarify",
        &json!({"question": "Restart <web-1> & drain it?", "options": ["Restart now", "Wait"]}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // The answer did not wait for the receivers: `slow` takes 3 s, and the
    // tool answered before it finished.
    assert!(
        !seen(&base)["slow"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x == "finished"),
        "the tool's answer waited for a notification"
    );
    let c = r.json();
    let id = c["id"].as_str().unwrap().to_owned();

    let got = wait_for(&base, "created", |v| {
        events(v, &id) == ["clarification.created"]
            && v["slack"].as_array().is_some_and(|a| !a.is_empty())
    });
    let event = got["hook"][0]["body"].clone();
    assert_eq!(event["status"], "pending");
    assert_eq!(event["question"], "Restart <web-1> & drain it?");
    assert_eq!(event["answer_url"], c["answer_url"]);
    assert_eq!(event["delivery"], format!("{id}.created"));
    let headers = &got["hook"][0]["headers"];
    assert_eq!(headers["toolgate-event"], "clarification.created");
    assert!(
        headers["toolgate-signature"]
            .as_str()
            .unwrap()
            .starts_with("v1=")
    );

    // A replay of the same delivery is refused by the receiver; a wrong
    // signature too.
    let replay = |sig: &str| {
        run_ok(
            Command::new("python3").args([
                "-c",
                "import sys, urllib.request, urllib.error\n\
                 r = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method='POST', headers={'Toolgate-Timestamp': sys.argv[3], 'Toolgate-Signature': sys.argv[4], 'Toolgate-Delivery': sys.argv[5]})\n\
                 try:\n    print(urllib.request.urlopen(r).status)\n\
                 except urllib.error.HTTPError as e:\n    print(e.code)",
                &hook,
                &serde_json::to_string(&event).unwrap(),
                headers["toolgate-timestamp"].as_str().unwrap(),
                sig,
                headers["toolgate-delivery"].as_str().unwrap(),
            ]),
            "replay",
        )
        .trim()
        .to_owned()
    };
    // serde_json writes the body as the server did (same order, no spaces).
    assert_eq!(
        replay(headers["toolgate-signature"].as_str().unwrap()),
        "409"
    );
    assert_eq!(replay("v1=00"), "401");

    // The person answers through the page's route: both channels hear it.
    let r = s.post_json(
        &format!("/clarifications/{id}/answer"),
        &json!({"choice": 0}),
    );
    assert_eq!(r.status, 200);
    let got = wait_for(&base, "answered", |v| {
        events(v, &id).len() == 2 && v["slack"].as_array().is_some_and(|a| a.len() == 2)
    });
    assert_eq!(
        events(&got, &id),
        ["clarification.created", "clarification.answered"]
    );
    assert_eq!(got["hook"][1]["body"]["answer"], "Restart now");
    assert!(
        got["refused"].as_array().unwrap().len() == 2,
        "only the two replays were refused: {got:#}"
    );

    // Slack: Block Kit as Slack's own types define it, within its limits.
    let messages: Vec<Value> = got["slack"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["body"].clone())
        .collect();
    if let Err(e) = slack_type_errors(&messages) {
        panic!("Slack payloads fail @slack/types:\n{e}\n{messages:#?}");
    }
    let created = &messages[0];
    let buttons = created["blocks"][2]["elements"].as_array().unwrap();
    assert_eq!(buttons[0]["text"]["text"], "Restart now");
    assert_eq!(
        buttons[0]["url"],
        format!("{}?choice=0", c["answer_url"].as_str().unwrap())
    );
    assert_eq!(created["blocks"][1]["text"]["type"], "plain_text");
    assert!(
        created["text"]
            .as_str()
            .unwrap()
            .contains("&lt;web-1&gt; &amp;")
    );
    // The tsc check can fail: a misspelt block type does.
    assert!(slack_type_errors(&[json!({"text": "x", "blocks": [{"type": "sectoin"}]})]).is_err());

    // The failed channel was retried, then recorded; the others say ok.
    let v = wait_for(&base, "down's three attempts", |v| v["down"] == 3);
    assert_eq!(v["down"], 3);
    let until = Instant::now() + Duration::from_secs(20);
    let state = loop {
        let st = s.get(&format!("/clarifications/{id}")).json();
        if st["notified"]["down"]["created"].is_string()
            && st["notified"]["slow"]["created"].is_string()
        {
            break st;
        }
        assert!(Instant::now() < until, "notified not recorded: {st:#}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        state["notified"],
        json!({
            "webhook": {"created": "ok", "answered": "ok"},
            "slack": {"created": "ok", "answered": "ok"},
            "down": {"created": "error: HTTP 500 after 3 attempts"},
            "slow": {"created": "ok"},
        })
    );
    let logs = s.logs();
    assert!(!logs.contains(SECRET), "the secret reached the logs");
    assert!(
        !logs.contains("/slack"),
        "Slack's URL (its credential) reached the logs"
    );
    assert!(logs.contains("\"notification failed\""), "{logs}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The delivery rules docs/notifications.md gives: each attempt has 5 s
/// (then the two retries, 0.5 s and 2 s later), a redirect is not followed
/// nor retried, and a failed delivery is not sent again later; none of it
/// delays the answer.
#[test]
fn deliveries_time_out_follow_no_redirect_and_are_not_sent_again() {
    let (_rx, base) = receiver(SECRET);
    let dir = std::env::temp_dir().join(format!("toolgate-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("toolgate.toml");
    std::fs::write(
        &path,
        webhooks(&base, &[("moved", "redirect"), ("hung", "hang")]),
    )
    .unwrap();
    let s = Server::start_with_args(&[], &["--config", path.to_str().unwrap()]);
    let asked = Instant::now();
    let r = s.post_json("/tools/clarify", &json!({"question": "Rules?"}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "the answer waited"
    );
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let state = toolgate_e2e::timing::poll_until(Duration::from_secs(40), "both outcomes", || {
        let st = s.get(&format!("/clarifications/{id}")).json();
        (st["notified"]["moved"]["created"].is_string()
            && st["notified"]["hung"]["created"].is_string())
        .then_some(st)
    });
    assert_eq!(
        state["notified"],
        json!({
            "moved": {"created": "error: HTTP 307 (not retried)"},
            "hung": {"created": "error: no answer within 5s after 3 attempts"},
        })
    );
    let v = seen(&base);
    assert_eq!(v["redirect"], 1, "a redirect is not retried: {v}");
    assert_eq!(v["hook"], json!([]), "nor followed: {v}");
    let starts: Vec<f64> = v["hang"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    assert_eq!(starts.len(), 3, "{v}");
    // 5 s for the attempt, then the wait before the next.
    let (first, second) = (starts[1] - starts[0], starts[2] - starts[1]);
    assert!((5.4..8.0).contains(&first), "{starts:?}");
    assert!((6.9..10.0).contains(&second), "{starts:?}");
    // Not sent again: the next event would be the answer, and nothing else
    // is due; the counts stay as they are.
    std::thread::sleep(Duration::from_secs(3));
    let later = seen(&base);
    assert_eq!(
        (
            later["redirect"].clone(),
            later["hang"].as_array().unwrap().len()
        ),
        (json!(1), 3)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `toolgate serve`'s sweep (`TOOLGATE_CLARIFY_SWEEP_SECS`): a question
/// that expires while nobody reads it is expired by the timer, and the
/// webhook hears `clarification.expired` with no request to the server
/// after the question was asked.
#[test]
fn the_sweep_expires_an_unread_question_and_tells_the_channels() {
    let (_rx, base) = receiver(SECRET);
    let hook = format!("{base}/hook");
    let s = Server::start(&[
        ("TOOLGATE_CLARIFY_WEBHOOK_URL", &hook),
        ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", SECRET),
        ("TOOLGATE_CLARIFY_EXPIRY_SECS", "1"),
        ("TOOLGATE_CLARIFY_SWEEP_SECS", "1"),
    ]);
    let r = s.post_json("/tools/clarify", &json!({"question": "Anyone there?"}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let id = r.json()["id"].as_str().unwrap().to_owned();
    // Only the receiver is polled from here on.
    let got = wait_for(&base, "expired by the sweep", |v| {
        events(v, &id) == ["clarification.created", "clarification.expired"]
    });
    let expired = got["hook"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["body"]["type"] == "clarification.expired")
        .unwrap();
    assert_eq!(expired["body"]["status"], "expired", "{expired:#}");
}

#[test]
fn the_notifications_page_shows_the_receivers_verification_code() {
    let receiver = std::fs::read_to_string(support("webhook_receiver.py")).unwrap();
    let start = receiver.find("# --- docs snippet start ---\n").unwrap();
    let end = receiver.find("# --- docs snippet end ---").unwrap();
    let snippet = &receiver[start + "# --- docs snippet start ---\n".len()..end];
    let page = std::fs::read_to_string(workspace().join("docs/notifications.md")).unwrap();
    assert!(
        page.contains(snippet),
        "docs/notifications.md's webhook verification snippet differs from the one the tests run:\n{snippet}"
    );
}

#[test]
fn sns_subscribers_hear_of_questions_through_moto() {
    let (_rx, base) = receiver(SECRET);
    let (_moto, endpoint) = moto();
    let topic = boto(
        &endpoint,
        "sns = boto3.client('sns', **kw)\n\
         arn = sns.create_topic(Name='toolgate-clarify')['TopicArn']\n\
         sns.subscribe(TopicArn=arn, Protocol='http', Endpoint=sys.argv[2] + '/sns')\n\
         sns.subscribe(TopicArn=arn, Protocol='http', Endpoint=sys.argv[2] + '/sns-cancelled', Attributes={'FilterPolicy': json.dumps({'event': ['cancelled']})})\n\
         boto3.client('dynamodb', **kw).create_table(TableName='clarifications', KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}], AttributeDefinitions=[{'AttributeName': 'id', 'AttributeType': 'S'}], BillingMode='PAY_PER_REQUEST')\n\
         print(arn)",
        &[&base],
    );
    let mut env: Vec<(&str, &str)> = AWS.to_vec();
    env.push(("AWS_ENDPOINT_URL", &endpoint));
    env.push(("TOOLGATE_CLARIFY_TABLE", "clarifications"));
    env.push(("TOOLGATE_CLARIFY_STEP_FUNCTIONS", "0"));
    env.push(("TOOLGATE_CLARIFY_SNS_TOPIC_ARN", topic.trim()));
    env.push(("TOOLGATE_CLARIFY_SNS_EVENTS", "created,cancelled"));
    let s = Server::start(&env);
    let r = s.post_json(
        "/tools/clarify",
        &json!({"question": "Approve the change window?", "options": ["yes", "no"]}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let got = wait_for(&base, "SNS", |v| {
        v["sns"].as_array().is_some_and(|a| !a.is_empty())
    });
    let n = &got["sns"][0]["body"];
    assert_eq!(n["Type"], "Notification");
    assert_eq!(n["TopicArn"], topic.trim());
    assert_eq!(n["Subject"], "Toolgate: an agent asks you a question");
    let message = n["Message"].as_str().unwrap();
    assert!(message.contains("Approve the change window?"), "{message}");
    assert!(
        message.contains(&format!("/clarifications/{id}/answer")),
        "{message}"
    );
    // The `event` attribute: a subscription filtered to `cancelled` heard
    // nothing yet (moto's HTTP notifications do not show attributes).
    assert_eq!(got["sns-cancelled"], json!([]));
    // Answered is not among this channel's events; cancelled is.
    assert_eq!(
        s.post_json(&format!("/clarifications/{id}/cancel"), &json!({}))
            .status,
        200
    );
    let got = wait_for(&base, "SNS cancelled", |v| {
        v["sns"].as_array().is_some_and(|a| a.len() == 2)
            && v["sns-cancelled"].as_array().is_some_and(|a| a.len() == 1)
    });
    assert_eq!(
        got["sns"][1]["body"]["Subject"],
        "Toolgate: a question was withdrawn"
    );
    assert_eq!(
        got["sns-cancelled"][0]["body"]["Subject"],
        "Toolgate: a question was withdrawn"
    );
    // The outcomes are kept in DynamoDB and shown (recorded just after
    // the delivery).
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let st = s.get(&format!("/clarifications/{id}")).json();
        if st["notified"] == json!({"sns": {"created": "ok", "cancelled": "ok"}}) {
            break;
        }
        assert!(Instant::now() < until, "{st:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
