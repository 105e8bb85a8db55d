use super::*;

// Slack's worked example (docs.slack.dev, "Verifying requests from
// Slack"): a slash command's body, its secret, time and signature.
const DOC_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const DOC_TS: &str = "1531420618";
const DOC_BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
const DOC_SIG: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
const DOC_NOW: i64 = 1_531_420_618;

const ID: &str = "0123456789abcdef0123456789abcdef01234567";
const SECRET: &[u8] = b"a-slack-signing-secret";

/// The documented algorithm, written out here: `v0=` and the hex
/// HMAC-SHA256 of `v0:{timestamp}:{body}`.
fn sign(secret: &[u8], ts: &str, body: &[u8]) -> String {
    let mut base = format!("v0:{ts}:").into_bytes();
    base.extend_from_slice(body);
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).unwrap();
    mac.update(&base);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("v0={hex}")
}

/// A body as Slack sends it: `payload=` and the JSON, form-encoded.
fn form(payload: &Value) -> Vec<u8> {
    let mut out = String::from("payload=");
    for b in payload.to_string().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out.into_bytes()
}

/// A `block_actions` payload in the shape of Slack's reference example.
fn click_payload(action_id: &str, value: &str) -> Value {
    json!({
        "type": "block_actions",
        "user": {"id": "U0CA5", "username": "amy.mcgee", "name": "amy.mcgee", "team_id": "T3MDE"},
        "api_app_id": "A0CA5",
        "token": "Shh_its_a_seekrit",
        "container": {"type": "message", "message_ts": "1548261231.000200",
                      "channel_id": "C0CA5", "is_ephemeral": false},
        "trigger_id": "12466734323.1395872398",
        "team": {"id": "T3MDE", "domain": "example"},
        "channel": {"id": "C0CA5", "name": "approvals"},
        "response_url": "https://hooks.slack.com/actions/T3MDE/1232321423432/D09sSasdasdAS9091209",
        "actions": [{
            "type": "button",
            "block_id": "=qXel",
            "action_id": action_id,
            "text": {"type": "plain_text", "text": "Approve", "emoji": true},
            "value": value,
            "style": "primary",
            "action_ts": "1548426417.840180",
        }],
    })
}

#[test]
fn slacks_own_example_verifies_and_a_change_does_not() {
    assert_eq!(
        sign(DOC_SECRET.as_bytes(), DOC_TS, DOC_BODY.as_bytes()),
        DOC_SIG
    );
    let check = |secret: &str, body: &str, sig: &str, now: i64| {
        verify(
            secret.as_bytes(),
            Some(DOC_TS),
            Some(sig),
            body.as_bytes(),
            now,
        )
    };
    assert_eq!(check(DOC_SECRET, DOC_BODY, DOC_SIG, DOC_NOW), Ok(()));
    assert_eq!(check(DOC_SECRET, DOC_BODY, DOC_SIG, DOC_NOW + 300), Ok(()));
    let tampered = DOC_BODY.replace("roadrunner", "roadrunnex");
    assert_eq!(
        check(DOC_SECRET, &tampered, DOC_SIG, DOC_NOW),
        Err(SlackRefusal::BadSignature)
    );
    assert_eq!(
        check("another-secret", DOC_BODY, DOC_SIG, DOC_NOW),
        Err(SlackRefusal::BadSignature)
    );
    let upper = format!("v0={}", DOC_SIG[3..].to_uppercase());
    assert_eq!(check(DOC_SECRET, DOC_BODY, &upper, DOC_NOW), Ok(()));
}

#[test]
fn refusals_say_what_is_wrong() {
    let body = form(&click_payload(APPROVE_ACTION, ID));
    let now = 1_800_000_000;
    let ts = now.to_string();
    let good = sign(SECRET, &ts, &body);
    let v = |secret: &[u8], ts: Option<&str>, sig: Option<&str>, now: i64| {
        verify(secret, ts, sig, &body, now)
    };
    assert_eq!(v(SECRET, Some(&ts), Some(&good), now), Ok(()));
    assert_eq!(
        v(b"", Some(&ts), Some(&good), now),
        Err(SlackRefusal::NoSecret)
    );
    assert_eq!(
        v(SECRET, None, Some(&good), now),
        Err(SlackRefusal::NoTimestamp)
    );
    assert_eq!(
        v(SECRET, Some(&ts), None, now),
        Err(SlackRefusal::NoSignature)
    );
    for bad in ["", "-1", "1.5", "17e8", "999999999999999999999"] {
        assert_eq!(
            v(SECRET, Some(bad), Some(&good), now),
            Err(SlackRefusal::BadTimestamp),
            "{bad}"
        );
    }
    // Five minutes either way, and not a second more.
    assert_eq!(v(SECRET, Some(&ts), Some(&good), now - 300), Ok(()));
    assert_eq!(
        v(SECRET, Some(&ts), Some(&good), now + 301),
        Err(SlackRefusal::Stale(301))
    );
    assert_eq!(
        v(SECRET, Some(&ts), Some(&good), now - 301),
        Err(SlackRefusal::Stale(301))
    );
    // A replay with a fresh timestamp but the old signature.
    let later = (now + 600).to_string();
    assert_eq!(
        v(SECRET, Some(&later), Some(&good), now + 600),
        Err(SlackRefusal::BadSignature)
    );
    for bad in [
        good.replacen("v0=", "v1=", 1),
        good[..good.len() - 2].to_owned(),
        format!("{}zz", &good[..good.len() - 2]),
        format!("{good},{good}"),
    ] {
        assert_eq!(
            v(SECRET, Some(&ts), Some(&bad), now),
            Err(SlackRefusal::BadSignature),
            "{bad}"
        );
    }
    assert_eq!(
        SlackRefusal::Stale(301).to_string(),
        "X-Slack-Request-Timestamp is 301 seconds from now (at most 300 allowed): a stale or replayed request"
    );
}

#[test]
fn a_click_on_approve_or_reject_is_read() {
    let c = parse(&form(&click_payload(APPROVE_ACTION, ID))).unwrap();
    assert_eq!(c.team_id, "T3MDE");
    assert_eq!(c.user_id, "U0CA5");
    assert_eq!(c.user_name, "amy.mcgee");
    assert_eq!(c.action, Decision::Approve);
    assert_eq!(c.approval_id, ID);
    assert_eq!(
        c.response_url.as_deref(),
        Some("https://hooks.slack.com/actions/T3MDE/1232321423432/D09sSasdasdAS9091209")
    );
    assert_eq!(approver_id(&c), "slack:T3MDE/U0CA5");
    assert_eq!(approver_display(&c), "@amy.mcgee (slack:T3MDE/U0CA5)");
    let debug = format!("{c:?}");
    assert!(
        !debug.contains(ID) && !debug.contains("hooks.slack.com"),
        "{debug}"
    );

    let c = parse(&form(&click_payload(REJECT_ACTION, ID))).unwrap();
    assert_eq!(c.action, Decision::Reject);

    // An organization-wide install: no team, the user's team.
    let mut p = click_payload(REJECT_ACTION, ID);
    p["team"] = Value::Null;
    p["user"]["team_id"] = json!("E0ORG");
    p["user"]["username"] = Value::Null;
    p["response_url"] = json!("https://evil.example/hooks.slack.com/");
    let c = parse(&form(&p)).unwrap();
    assert_eq!(approver_id(&c), "slack:E0ORG/U0CA5");
    assert_eq!(c.user_name, "amy.mcgee");
    assert_eq!(c.response_url, None);
}

#[test]
fn anything_but_one_approval_click_is_refused_in_words() {
    let refused = |body: &[u8]| parse(body).unwrap_err();
    let mut p = click_payload(APPROVE_ACTION, ID);
    p["type"] = json!("view_submission");
    assert_eq!(
        refused(&form(&p)),
        "the payload is not a button click (type \"view_submission\")"
    );
    // The link buttons' clicks arrive too.
    assert_eq!(
        refused(&form(&click_payload("toolgate_review", ""))),
        "not an approval button (action_id \"toolgate_review\")"
    );
    let mut p = click_payload(APPROVE_ACTION, ID);
    let a = p["actions"][0].clone();
    p["actions"] = json!([a.clone(), a]);
    assert_eq!(
        refused(&form(&p)),
        "the payload has 2 actions; a click has one"
    );
    for bad in [&ID.to_uppercase(), &ID[1..], &format!("{ID}0"), "", "../x"] {
        assert_eq!(
            refused(&form(&click_payload(REJECT_ACTION, bad))),
            "the button's value is not an approval id (40 lowercase hex)",
            "{bad}"
        );
    }
    let mut p = click_payload(APPROVE_ACTION, ID);
    p["user"]["id"] = json!("U1/../T2");
    assert_eq!(refused(&form(&p)), "the payload has no valid user id");
    let mut p = click_payload(APPROVE_ACTION, ID);
    p["actions"][0]["type"] = json!("overflow");
    assert_eq!(
        refused(&form(&p)),
        "the action is not a button (type \"overflow\")"
    );

    let body = form(&click_payload(APPROVE_ACTION, ID));
    let mut twice = body.clone();
    twice.push(b'&');
    twice.extend_from_slice(&body);
    assert_eq!(
        refused(&twice),
        "the body has more than one `payload` field"
    );
    assert_eq!(refused(b"token=x&text="), "the body has no `payload` field");
    assert_eq!(
        refused(b"payload=%7B%zz"),
        "the body is not form-encoded (a bad % escape)"
    );
    assert_eq!(
        refused(b"payload=%7"),
        "the body is not form-encoded (a bad % escape)"
    );
    assert!(refused(b"payload=%7B").starts_with("the payload is not JSON"));
    assert_eq!(refused(b"payload=%FF"), "the body's payload is not UTF-8");
    let mut big = body.clone();
    big.resize(MAX_BODY_BYTES + 1, b'+');
    assert_eq!(
        refused(&big),
        "the body is 65537 bytes, over the 65536 a Slack click may have"
    );
    // Padding within the bound is fine (a space after the JSON).
    let mut padded = body;
    padded.push(b'+');
    assert!(parse(&padded).is_ok());
}

#[test]
fn slack_users_allow_the_listed_or_anyone_with_a_star() {
    let list = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(allowed(&list(&["U1", "U0CA5"]), "U0CA5"));
    assert!(!allowed(&list(&["U1"]), "U0CA5"));
    assert!(!allowed(&list(&["u0ca5"]), "U0CA5"));
    assert!(!allowed(&[], "U0CA5"));
    assert!(allowed(&list(&["*"]), "U0CA5"));
}

fn view(status: &str) -> Value {
    json!({
        "id": ID, "kind": "approval", "status": status,
        "summary": "Run a command on web-1 (deploy@10.0.0.5)",
        "tool": "ssh_run", "target": "web-1", "caller": "token-0123456789ab",
        "details": [{"label": "Command", "text": "systemctl restart app", "code": true}],
        "expires_at": "2026-12-03T00:00:00Z", "approver": "slack:T3MDE/U0CA5",
        "ref": "ref:0123456789abcdef",
        "inbox_url": format!("https://t.example/inbox/{ID}"),
    })
}

#[test]
fn the_ack_replaces_the_message_or_tells_the_clicker_alone() {
    use crate::error::ErrorCode;
    let mut p = click_payload(APPROVE_ACTION, ID);
    p["user"]["username"] = json!("<!channel>");
    let click = parse(&form(&p)).unwrap();
    let m = ack_message(&click, &Ok(view("approved")));
    assert_eq!(m["replace_original"], true);
    assert_eq!(
        m["text"],
        "Approved: Run a command on web-1 (deploy@10.0.0.5)"
    );
    let s = m.to_string();
    assert!(
        !s.contains(APPROVE_ACTION) && !s.contains(REJECT_ACTION),
        "{s}"
    );
    // The name is someone's: only ever plain text.
    assert_eq!(m["blocks"][1]["elements"][0]["type"], "plain_text");
    assert_eq!(
        m["blocks"][1]["elements"][0]["text"],
        "by @<!channel> (slack:T3MDE/U0CA5)"
    );
    assert!(s.contains("systemctl restart app"));

    // Decided elsewhere, or expired: the message shows how it ended.
    let late = ToolError::new(ErrorCode::Expired, "This approval has expired")
        .with_detail("approval", view("expired"));
    let m = ack_message(&click, &Err(late));
    assert_eq!(m["replace_original"], true);
    assert_eq!(m["blocks"][0]["text"]["text"], "*Expired undecided*");

    for e in [
        ToolError::new(
            ErrorCode::Forbidden,
            "Slack user U9 is not one of this deployment's approvers (<!here>)",
        ),
        // A refusal that carries a pending approval changes nothing.
        ToolError::new(
            ErrorCode::Forbidden,
            "Slack user U9 is not one of this deployment's approvers (<!here>)",
        )
        .with_detail("approval", view("pending")),
    ] {
        let m = ack_message(&click, &Err(e));
        assert_eq!(m["replace_original"], false);
        assert_eq!(m["response_type"], "ephemeral");
        assert_eq!(
            m["text"],
            "Your click was not recorded: Slack user U9 is not one of this deployment's approvers (&lt;!here&gt;)"
        );
        assert_eq!(m["blocks"][1]["text"]["type"], "plain_text");
    }
}
