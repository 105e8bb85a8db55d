use super::*;

fn script_of(html: &str) -> &str {
    let start = html.find("<script nonce=\"n0nce\">").unwrap() + 22;
    let end = html[start..].find("</script>").unwrap();
    &html[start..start + end]
}

#[test]
fn one_script_and_one_style_both_with_the_nonce() {
    let html = inbox("n0nce");
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert_eq!(html.matches("<script nonce=\"n0nce\">").count(), 1);
    assert_eq!(html.matches("</script>").count(), 1);
    assert_eq!(html.matches("<style").count(), 1);
    assert_eq!(html.matches("<style nonce=\"n0nce\">").count(), 1);
    assert!(!html.contains("src="), "no external assets");
    assert!(!html.contains("style=\""), "no inline style attributes");
    assert!(csp("n0nce").contains("script-src 'nonce-n0nce'"));
    assert!(inbox("\"><script>").contains("nonce=\"&quot;&gt;&lt;script&gt;\""));
}

#[test]
fn no_inline_handlers_and_no_html_from_strings() {
    let html = inbox("n0nce");
    let markup = html.replace(script_of(&html), "");
    let handler = regex::Regex::new(r"(?i)<[^>]*\son[a-z]+\s*=").unwrap();
    assert!(
        !handler.is_match(&markup),
        "an inline handler in the markup"
    );
    let script = script_of(&html);
    for bad in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
        "querySelector",
        "setAttribute('on",
        "localStorage",
    ] {
        assert!(!script.contains(bad), "the script uses {bad}");
    }
    assert!(!script.contains("__"), "a placeholder was left: {script}");
}

#[test]
fn every_element_the_script_names_exists() {
    let html = inbox("n0nce");
    let script = script_of(&html);
    let by_id = regex::Regex::new(r"\$\('([a-z-]+)'\)").unwrap();
    let mut n = 0;
    for c in by_id.captures_iter(script) {
        n += 1;
        let id = &c[1];
        assert!(html.contains(&format!("id=\"{id}\"")), "no element #{id}");
    }
    assert!(n > 20, "{n}");
    for id in ["sign-in", "inbox", "approval"] {
        assert!(script.contains(&format!("'{id}'")), "{id}");
    }
}

#[test]
fn the_routes_and_fields_it_uses() {
    let html = inbox("n0nce");
    let script = script_of(&html);
    for route in [
        "'/approvals?status=pending'",
        "'/clarifications?status=pending'",
        "'/approvals/' + id",
        "'/approvals/' + id + '/decision'",
        "'/approval-links/' + id",
        "'/clarifications/' + v.id + '/answer'",
        "'Authorization'",
        "{decision: decision}",
        "{capability: cap, decision: decision}",
    ] {
        assert!(script.contains(route), "{route}");
    }
    assert!(html.contains("Anyone with this link can decide"));
    assert!(html.contains("type=\"password\""));
    assert!(script.contains("sessionStorage"));
    assert!(script.contains(&format!("'{TOKEN_KEY}'")));
    // The table the markers come from is this crate's.
    assert!(script.contains(&shown::names_json()));
}
