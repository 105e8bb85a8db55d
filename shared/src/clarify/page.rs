//! The page a person answers on: `GET /clarifications/{id}/answer` (the
//! `answer_url`), or `GET /clarifications/{id}` with `Accept: text/html`.
//! Self-contained (no external assets), escaped (the
//! question is an agent's text, so untrusted), usable with a keyboard and a
//! screen reader, and locked down by a CSP whose only script is the inline
//! one carrying this response's nonce. The agent's text is shown with
//! every invisible or deceptive character as a visible marker
//! ([`crate::approvals::shown`]).

use super::{Clarification, Status, rfc3339};
use crate::approvals::shown::{visible_html, warning};

/// Escapes text for HTML element content and quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    crate::approvals::shown::escape_into(&mut out, s);
    out
}

/// The Content-Security-Policy for a page with this nonce.
pub fn csp(nonce: &str) -> String {
    format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    )
}

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}\
h1{font-size:1.25rem}.q{white-space:pre-wrap;overflow-wrap:anywhere;font-size:1.1rem;border-left:4px solid #2563eb;padding:.5rem 1rem;background:#f3f6fd}\
button{font:inherit;padding:.5rem 1rem;margin:.25rem .5rem .25rem 0;border:1px solid #2563eb;border-radius:.375rem;background:#fff;color:#1e40af;cursor:pointer}\
button:hover,button:focus{background:#2563eb;color:#fff;outline:3px solid #93c5fd}\
textarea{font:inherit;width:100%;box-sizing:border-box;min-height:5rem}\
.status{padding:.75rem 1rem;border-radius:.375rem;background:#ecfdf5;border:1px solid #10b981}\
.status.bad{background:#fef2f2;border-color:#ef4444}\
.ctl{font:600 .8em ui-monospace,monospace;background:#fde68a;color:#7c2d12;border:1px solid #b45309;border-radius:.2rem;padding:0 .15rem;white-space:nowrap}\
.warn{background:#fffbeb;border-left:4px solid #d97706;padding:.4rem .75rem}";

const SCRIPT: &str = r#"
const form = document.getElementById('answer-form');
const status = document.getElementById('status');
async function send(body) {
  for (const b of form.querySelectorAll('button,textarea')) b.disabled = true;
  try {
    const r = await fetch(form.dataset.url, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
    const v = await r.json();
    if (r.ok) {
      status.textContent = 'Thank you. Your answer was recorded: ' + v.answer;
      form.hidden = true;
    } else {
      status.textContent = (v.error && v.error.message) || 'The answer was not accepted.';
      status.className = 'status bad';
      for (const b of form.querySelectorAll('button,textarea')) b.disabled = false;
    }
  } catch (e) {
    status.textContent = 'Could not send the answer: ' + e;
    status.className = 'status bad';
    for (const b of form.querySelectorAll('button,textarea')) b.disabled = false;
  }
  status.hidden = false;
  status.focus();
}
form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = document.getElementById('free').value.trim();
  if (text) send({answer: text});
});
const choices = Array.from(form.querySelectorAll('button[data-choice]'));
for (const b of choices) {
  b.addEventListener('click', () => send({choice: Number(b.dataset.choice)}));
}
// A link from a notification (`?choice=N`) opens with that option focused:
// opening a link never answers, a click does. Only a small whole number
// is read from the link; anything else is ignored.
const asked = new URLSearchParams(location.search).get('choice');
if (asked !== null && /^[0-9]{1,3}$/.test(asked)) {
  const n = Number(asked);
  const picked = choices.find((b) => Number(b.dataset.choice) === n);
  if (picked) picked.focus();
}
"#;

/// The whole page for `c` as it stands at `now` (Unix milliseconds): the form
/// while it is pending, else how it ended. `nonce` marks the one inline script
/// and style the CSP lets run.
pub fn render(c: &Clarification, now: i64, nonce: &str) -> String {
    let status = c.status_at(now);
    let body = match status {
        Status::Pending => {
            let mut buttons = String::new();
            for (i, o) in c.options.iter().enumerate() {
                buttons.push_str(&format!(
                    "<button type=\"button\" data-choice=\"{i}\">{}</button>\n",
                    visible_html(o)
                ));
            }
            let options = if buttons.is_empty() {
                String::new()
            } else {
                format!(
                    "<fieldset><legend>Choose an answer</legend>\n{buttons}</fieldset>\n"
                )
            };
            format!(
                "<form id=\"answer-form\" data-url=\"/clarifications/{id}/answer\">\n{options}\
                 <p><label for=\"free\">{label}</label><br>\
                 <textarea id=\"free\" name=\"answer\" maxlength=\"10000\"></textarea></p>\n\
                 <p><button type=\"submit\">Send answer</button></p>\n</form>\n\
                 <p id=\"status\" class=\"status\" role=\"status\" aria-live=\"polite\" tabindex=\"-1\" hidden></p>\n\
                 <p><small>Open until {expires}.</small></p>\n\
                 <script nonce=\"{nonce}\">{SCRIPT}</script>\n",
                id = escape(&c.id),
                label = if c.options.is_empty() {
                    "Your answer"
                } else {
                    "Or write your own answer"
                },
                expires = rfc3339(c.expires_at),
            )
        }
        Status::Answered => format!(
            "<p class=\"status\" role=\"status\">Answered: {}</p>\n",
            visible_html(c.answer.as_deref().unwrap_or(""))
        ),
        Status::Expired => {
            "<p class=\"status bad\" role=\"status\">This question has expired; it can no longer be answered.</p>\n".to_owned()
        }
        Status::Cancelled => {
            "<p class=\"status bad\" role=\"status\">This question was withdrawn.</p>\n".to_owned()
        }
    };
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>A question for you</title>\n<style nonce=\"{nonce}\">{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <h1>An agent asks</h1>\n<p class=\"q\" id=\"question\">{question}</p>\n{warn}{body}</main>\n</body>\n</html>\n",
        question = visible_html(&c.question),
        warn = warning(&c.question)
            .map(|w| format!(
                "<p class=\"warn\" id=\"question-warning\">{}</p>\n",
                escape(&w)
            ))
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_inert() {
        assert_eq!(
            escape(r#"<script>alert("x")</script>&'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"
        );
        let c = Clarification {
            id: "ab".repeat(20),
            question: "<img src=x onerror=alert(1)>".into(),
            options: vec!["</button><script>bad()</script>".into()],
            status: Status::Pending,
            answer: None,
            choice: None,
            created_at: 0,
            expires_at: i64::MAX / 2,
            settled_at: None,
            task_token: Some("secret-token".into()),
            notified: Default::default(),
        };
        let html = render(&c, 0, "n0nce");
        assert!(!html.contains("<img"));
        assert!(!html.contains("<script>bad"));
        assert!(
            !html.contains("secret-token"),
            "the task token never reaches the page"
        );
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    }

    fn pending(question: &str, options: &[&str]) -> Clarification {
        Clarification {
            id: "ab".repeat(20),
            question: question.into(),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            status: Status::Pending,
            answer: None,
            choice: None,
            created_at: 0,
            expires_at: i64::MAX / 2,
            settled_at: None,
            task_token: None,
            notified: Default::default(),
        }
    }

    #[test]
    fn hidden_characters_show_as_markers_with_a_warning() {
        let question = format!(
            "Run `uptime{}; touch X` and open z\u{202e}gnp.exe?",
            " ".repeat(1495)
        );
        let html = render(&pending(&question, &["ok\u{200b}", "no"]), 0, "n0nce");
        assert!(html.contains("; touch X"), "nothing is cut");
        assert!(
            html.contains(
                "<span class=\"ctl\" title=\"1495 spaces in a row\">⟨1495 spaces⟩</span>"
            )
        );
        assert!(html.contains(
            "z<span class=\"ctl\" title=\"U+202E RIGHT-TO-LEFT OVERRIDE\">⟨U+202E RLO⟩</span>gnp.exe"
        ));
        assert!(html.contains("data-choice=\"0\">ok<span class=\"ctl\""));
        for c in ['\u{202e}', '\u{200b}'] {
            assert!(!html.contains(c), "U+{:04X} raw", c as u32);
        }
        assert!(!html.contains(&" ".repeat(9)));
        assert!(html.contains(
            "<p class=\"warn\" id=\"question-warning\">Look closely: this text holds a \
             right-to-left override and 1495 spaces in a row"
        ));
        // Ordinary questions carry no warning.
        assert!(!render(&pending("Restart nginx?", &[]), 0, "n").contains("class=\"warn\""));
    }

    #[test]
    fn the_choice_in_a_link_is_a_number_not_a_selector() {
        // The query string never reaches a selector (a crafted one threw,
        // and the free-text answer stopped working).
        assert!(!SCRIPT.contains("data-choice=\"' +"));
        assert!(SCRIPT.contains("/^[0-9]{1,3}$/.test(asked)"));
        // The answer form works whatever the rest of the script does.
        let submit = SCRIPT.find("form.addEventListener('submit'").unwrap();
        assert!(submit < SCRIPT.find("location.search").unwrap());
        // Every selector is a literal.
        let literal = regex::Regex::new(r"querySelector(All)?\('[^'+]*'\)").unwrap();
        assert_eq!(
            literal.find_iter(SCRIPT).count(),
            SCRIPT.matches("querySelector").count()
        );
    }
}
