use super::*;

const ID: &str = "0123456789abcdef0123456789abcdef01234567";
const PAGE: &str = "https://t.example/inbox/0123456789abcdef0123456789abcdef01234567";

fn units(v: &Value) -> usize {
    v.as_str().unwrap().encode_utf16().count()
}

/// Slack's documented limits on what these messages use: the caller
/// of every test below checks its messages with this.
fn within_slacks_limits(m: &Value) {
    assert!(!m["text"].as_str().unwrap().is_empty());
    let blocks = m["blocks"].as_array().unwrap();
    assert!(blocks.len() <= MAX_BLOCKS, "{} blocks", blocks.len());
    let mut ids = std::collections::HashSet::new();
    for b in blocks {
        match b["type"].as_str().unwrap() {
            "section" => {
                let t = &b["text"]["text"];
                assert!(units(t) <= SECTION_CHARS, "a section of {}", units(t));
                assert!(!t.as_str().unwrap().trim().is_empty(), "an empty section");
            }
            "context" => {
                let e = b["elements"].as_array().unwrap();
                assert!(!e.is_empty() && e.len() <= 10);
            }
            "actions" => {
                let e = b["elements"].as_array().unwrap();
                assert!(!e.is_empty() && e.len() <= 25);
                for button in e {
                    assert!(ids.insert(button["action_id"].as_str().unwrap().to_owned()));
                    assert!((1..=75).contains(&units(&button["text"]["text"])));
                    if let Some(u) = button.get("url") {
                        assert!(units(u) <= 3000);
                    }
                    if let Some(v) = button.get("value") {
                        assert!((1..=2000).contains(&units(v)));
                    }
                    if let Some(c) = button.get("confirm") {
                        assert!(units(&c["title"]["text"]) <= 100);
                        assert!(units(&c["text"]["text"]) <= 300);
                        assert!(units(&c["confirm"]["text"]) <= 30);
                        assert!(units(&c["deny"]["text"]) <= 30);
                    }
                }
            }
            other => panic!("unexpected block {other}"),
        }
    }
}

fn approval(command: &str) -> Value {
    json!({
        "id": ID, "kind": "approval", "status": "pending",
        "summary": "Run a command on web-1 (deploy@10.0.0.5)",
        "tool": "ssh_run", "target": "web-1", "caller": "token-0123456789ab",
        "details": [
            {"label": "Command", "text": command, "code": true},
            {"label": "Intent", "text": "Restart the app"},
            {"label": "Needs approval because", "text": "policy: restarts"},
            {"label": "Host key", "text": "SHA256:abc"},
        ],
        "expires_at": "2026-12-03T00:00:00Z", "ref": "ref:0123456789abcdef",
        "inbox_url": PAGE,
    })
}

/// Every `plain_text` section's text after the block whose text is
/// `*{label}*`…, up to the next label: a field's text as shown.
fn field_text(m: &Value, label: &str) -> String {
    let blocks = m["blocks"].as_array().unwrap();
    let start = blocks
        .iter()
        .position(|b| {
            b["text"]["type"] == "mrkdwn"
                && b["text"]["text"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("*{label}*"))
        })
        .unwrap();
    blocks[start + 1..]
        .iter()
        .take_while(|b| b["text"]["type"] == "plain_text")
        .map(|b| b["text"]["text"].as_str().unwrap())
        .collect()
}

fn buttons(m: &Value) -> Vec<Value> {
    m["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn an_approval_carries_approve_and_reject_or_a_link_to_the_page() {
    let mut v = approval("systemctl restart app");
    v["summary"] = json!("<!channel> *Run* <https://evil|this>");
    let m = message_for(Event::Created, &v, true);
    within_slacks_limits(&m);
    assert_eq!(
        m["text"],
        "Approval needed: &lt;!channel&gt; *Run* &lt;https://evil|this&gt;"
    );
    assert_eq!(m["blocks"][1]["text"]["type"], "plain_text");
    assert_eq!(field_text(&m, "Command"), "systemctl restart app");
    assert_eq!(field_text(&m, "Needs approval because"), "policy: restarts");
    let b = buttons(&m);
    assert_eq!(b.len(), 2);
    assert_eq!(
        (&b[0]["action_id"], &b[0]["value"], &b[0]["style"]),
        (&json!(APPROVE_ACTION), &json!(ID), &json!("primary"))
    );
    assert_eq!(
        (&b[1]["action_id"], &b[1]["value"], &b[1]["style"]),
        (&json!(REJECT_ACTION), &json!(ID), &json!("danger"))
    );
    assert_eq!(b[1]["confirm"]["confirm"]["text"], "Reject");
    assert!(b.iter().all(|b| b.get("url").is_none()));
    // Anything a caller wrote is plain text, never mrkdwn.
    let s = m.to_string();
    assert_eq!(s.matches("<!channel>").count(), 1);

    let m = message(Event::Created, &v);
    within_slacks_limits(&m);
    let b = buttons(&m);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["text"]["text"], "Review and decide");
    assert_eq!(b[0]["url"], PAGE);
    // The link the channel was given wins (link-holder mode's).
    let mut linked = v.clone();
    linked["approval_url"] = json!(format!("{PAGE}#cap=c4f3"));
    let m = message(Event::Created, &linked);
    assert_eq!(buttons(&m)[0]["url"], format!("{PAGE}#cap=c4f3"));
    assert!(!m.to_string().contains(APPROVE_ACTION));

    // The reason, kept apart from the fields, gets a box of its own.
    let mut v = approval("ls");
    v["details"].as_array_mut().unwrap().remove(2);
    v["why"] = json!("policy: restarts\nHost key: fake");
    let m = approval_message(&v, true, PAGE);
    within_slacks_limits(&m);
    assert_eq!(
        field_text(&m, "Needs approval because"),
        "policy: restarts\nHost key: fake"
    );
}

#[test]
fn a_long_command_is_shown_whole_across_sections() {
    let command: String = (0..2000)
        .map(|i| format!("echo {i:05};"))
        .collect::<Vec<_>>()
        .join(" ");
    let m = approval_message(&approval(&command), true, PAGE);
    within_slacks_limits(&m);
    assert!(command.chars().count() > 3 * SECTION_CHARS);
    assert_eq!(field_text(&m, "Command"), command);
    assert!(!m.to_string().contains("not shown"));
    assert_eq!(buttons(&m)[0]["action_id"], APPROVE_ACTION);

    // Characters beyond the basic plane count twice where Slack counts
    // UTF-16: still within a section's limit, still whole.
    let emoji = "😀".repeat(4000);
    let m = approval_message(&approval(&emoji), true, PAGE);
    within_slacks_limits(&m);
    assert_eq!(field_text(&m, "Command"), emoji);
}

#[test]
fn past_slacks_limits_it_says_how_much_is_not_shown_and_links_the_page() {
    let command = "x".repeat(200_000);
    let m = approval_message(&approval(&command), true, PAGE);
    within_slacks_limits(&m);
    assert_eq!(m["blocks"].as_array().unwrap().len(), MAX_BLOCKS - 1);
    let shown = field_text(&m, "Command").chars().count();
    assert!(shown > 100_000, "{shown}");
    let hidden = 200_000 - shown;
    let s = m.to_string();
    assert!(
            s.contains(&format!("*{hidden} characters are not shown here* (Slack's limits): review the whole request on the page before deciding.")),
            "{s:.600}"
        );
    assert!(s.contains(&format!(
        "_{hidden} of its 200000 characters are not shown here._"
    )));
    // The later fields keep their boxes.
    assert_eq!(field_text(&m, "Host key"), "SHA256:abc");
    // Approve only what is shown whole: review on the page, or reject.
    let b = buttons(&m);
    let ids: Vec<&str> = b.iter().map(|b| b["action_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [REVIEW_ACTION, REJECT_ACTION]);
    assert_eq!(b[0]["url"], PAGE);

    // Without interactivity: the same line, and the link.
    let m = approval_message(&approval(&command), false, PAGE);
    within_slacks_limits(&m);
    assert_eq!(buttons(&m).len(), 1);
    assert!(m.to_string().contains("characters are not shown here"));

    // Many fields: each keeps its box while blocks last.
    let mut v = approval("ls");
    v["details"] = json!(
        (0..40)
            .map(|i| json!({"label": format!("F{i}"), "text": "y".repeat(5000)}))
            .collect::<Vec<_>>()
    );
    let m = approval_message(&v, true, PAGE);
    within_slacks_limits(&m);
    assert!(m.to_string().contains("characters are not shown here"));
}

#[test]
fn invisible_characters_are_marked_and_warned_of() {
    let command = "echo safe\u{202E}\u{200B}; rm -rf /\u{7}";
    let m = approval_message(&approval(command), true, PAGE);
    within_slacks_limits(&m);
    let shown = field_text(&m, "Command");
    assert!(!shown.contains('\u{202E}') && !shown.contains('\u{200B}') && !shown.contains('\u{7}'));
    assert!(
        shown.contains("⟨U+202E") && shown.contains("⟨U+200B") && shown.contains("⟨U+0007"),
        "{shown}"
    );
    let s = m.to_string();
    assert_eq!(s.matches("Look closely: this text holds").count(), 1, "{s}");
    let head = m["blocks"][2]["text"]["text"].as_str().unwrap();
    assert!(
        head.starts_with("*Command*\n:warning: _Look closely"),
        "{head}"
    );
    // Nothing is cut: approving stays possible.
    assert_eq!(buttons(&m)[0]["action_id"], APPROVE_ACTION);
}

#[test]
fn later_events_say_how_the_approval_ended() {
    let mut v = approval("ls");
    v["status"] = json!("approved");
    v["approver"] = json!("slack:T1/U2");
    let m = message_for(Event::Answered, &v, true);
    within_slacks_limits(&m);
    assert_eq!(
        m["text"],
        "Approved: Run a command on web-1 (deploy@10.0.0.5)"
    );
    assert_eq!(m["blocks"][0]["text"]["text"], "*Approved*:");
    assert_eq!(m["blocks"][2]["elements"][0]["text"], "by slack:T1/U2");
    v["status"] = json!("rejected");
    let m = message(Event::Answered, &v);
    assert_eq!(m["blocks"][0]["text"]["text"], "*Rejected*:");
    for (event, status, head) in [
        (Event::Expired, "expired", "*Expired undecided*:"),
        (Event::Cancelled, "withdrawn", "*Withdrawn*:"),
    ] {
        v["status"] = json!(status);
        let m = message(event, &v);
        within_slacks_limits(&m);
        assert_eq!(m["blocks"][0]["text"]["text"], head);
        assert!(buttons(&m).is_empty());
    }
    // Settled in place of the clicked message: no buttons, who decided.
    v["status"] = json!("approved");
    let m = settled_approval_message(&v, "Approved", Some("@amy (slack:T1/U2)"), PAGE);
    within_slacks_limits(&m);
    assert!(buttons(&m).is_empty());
    assert_eq!(
        m["blocks"][1]["elements"][0]["text"],
        "by @amy (slack:T1/U2)"
    );
    assert_eq!(field_text(&m, "Command"), "ls");
}

#[test]
fn hostile_text_stays_plain_and_within_slacks_limits() {
    let body = json!({
        "question": "<!channel> *deploy* <https://evil|click>",
        "options": ["x".repeat(200), "no"],
        "answer_url": "https://t.example/clarifications/ab/answer",
        "expires_at": "2026-12-03T00:00:00Z",
    });
    let m = message(Event::Created, &body);
    assert_eq!(
        m["text"],
        "An agent asks: &lt;!channel&gt; *deploy* &lt;https://evil|click&gt;"
    );
    assert_eq!(m["blocks"][1]["text"]["type"], "plain_text");
    let buttons = m["blocks"][2]["elements"].as_array().unwrap();
    assert_eq!(buttons.len(), 3);
    assert_eq!(
        buttons[0]["text"]["text"].as_str().unwrap().chars().count(),
        75
    );
    assert_eq!(
        buttons[1]["url"],
        "https://t.example/clarifications/ab/answer?choice=1"
    );
}
