//! Toolgate: CPython 3.13's grammar and wording where RustPython 0.6 follows
//! 3.14 or words an error its own way. See `PATCHES.md`.

use crate::{
    CompileError, CpythonDiagnostic, NormalizedParseDiagnostic, parser, skip_horizontal_whitespace,
    skip_quoted_string, source_locations, trim_end_horizontal_whitespace,
};
use core::sync::atomic::{AtomicBool, Ordering};
use ruff_python_ast::{self as ast, PythonVersion};
use ruff_source_file::{PositionEncoding, SourceFile, SourceLocation};
use ruff_text_size::TextRange;

/// Whether source is held to CPython 3.13's grammar. Off by default, as
/// upstream: RustPython's own `Lib` is 3.14 code, frozen by this compiler at
/// build time. An embedder whose users write for 3.13 turns it on.
static GRAMMAR_3_13: AtomicBool = AtomicBool::new(false);

/// Holds every later compile to CPython 3.13's grammar (or not): syntax
/// added after 3.13 (`except A, B:`, t-strings, `lazy import`, unpacking in
/// comprehensions) is then the SyntaxError 3.13 raises.
pub fn use_python_3_13_grammar(on: bool) {
    GRAMMAR_3_13.store(on, Ordering::Relaxed);
}

/// The parser's options for `mode`, with the target version when held to 3.13.
pub(crate) fn parse_options(mode: parser::Mode) -> parser::ParseOptions {
    let options = parser::ParseOptions::from(mode);
    if GRAMMAR_3_13.load(Ordering::Relaxed) {
        options.with_target_version(PythonVersion::PY313)
    } else {
        options
    }
}

const HINT: &str = " here. Maybe you meant '==' instead of '='?";

/// The error CPython 3.13 raises for syntax the parser accepted only because
/// a later Python has it (`except A, B:`, t-strings, `lazy import`, `[*x for
/// x in y]`) or that 3.8 removed (`f((a)=1)`).
pub(crate) fn newer_syntax_error(
    errors: &[parser::UnsupportedSyntaxError],
    source_file: &SourceFile,
) -> Option<CompileError> {
    if !GRAMMAR_3_13.load(Ordering::Relaxed) {
        return None;
    }
    use parser::UnsupportedSyntaxErrorKind as Kind;
    let first = errors.iter().min_by_key(|e| e.range.start())?;
    let text = source_file.source_text();
    let (start, end) = (first.range.start().to_usize(), first.range.end().to_usize());
    let (message, start, end) = match first.kind {
        Kind::UnparenthesizedExceptionTypes => {
            ("multiple exception types must be parenthesized", start, end)
        }
        // CPython reads `t` as a name and then meets a string.
        Kind::TemplateStrings => {
            let quote = text[start..end]
                .find(['\'', '"'])
                .map_or(start, |i| start + i);
            ("invalid syntax", quote, end)
        }
        // `lazy` is a name, and `import` cannot follow one.
        Kind::LazyImportStatement => {
            let after = start + text[start..].find(char::is_whitespace).unwrap_or(0);
            let next = after + (text[after..].len() - text[after..].trim_start().len());
            let word = text[next..]
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .map_or(text.len(), |i| next + i);
            ("invalid syntax", next, word)
        }
        // (The parser does not export which kind; the source says.)
        Kind::UnpackingInComprehension(_) if text[start..].starts_with("**") => (
            "dict unpacking cannot be used in dict comprehension",
            start,
            end,
        ),
        Kind::UnpackingInComprehension(_) => (
            "iterable unpacking cannot be used in comprehension",
            start,
            end,
        ),
        // CPython points inside the parentheses, at the name.
        Kind::ParenthesizedKeywordArgumentName => (
            "expression cannot contain assignment, perhaps you meant \"==\"?",
            start
                + (text[start..end].len() - text[start..end].trim_start_matches(['(', ' ']).len()),
            end,
        ),
        // Syntax 3.13 has; the parser reports none of these at its target.
        _ => return None,
    };
    Some(CompileError::from_source_error(
        source_file,
        CpythonDiagnostic::new(message.to_owned(), start, end),
    ))
}

/// CPython 3.13 words an invalid assignment target "cannot assign to X here.
/// Maybe you meant '==' instead of '='?" exactly when `invalid_named_expression`
/// matches: the target starts the statement or an `if`/`elif`/`while`
/// condition, is one `bitwise_or` (not a list, tuple, generator, `True`,
/// `None` or `False`), and is followed by `=`, one `bitwise_or`, and no
/// further `=` or `:=`. The diagnostics above reach the
/// same message by several routes; this decides the hint once for all.
pub(crate) fn assignment_hint(
    mut diagnostic: NormalizedParseDiagnostic,
    source_file: &SourceFile,
) -> NormalizedParseDiagnostic {
    let parser::ParseErrorType::OtherError(message) = &diagnostic.error else {
        return diagnostic;
    };
    let Some(rest) = message.strip_prefix("cannot assign to ") else {
        return diagnostic;
    };
    let name = rest.strip_suffix(HINT).unwrap_or(rest);
    let text = source_file.source_text();
    let start = byte_offset(source_file, diagnostic.location);
    let end = byte_offset(source_file, diagnostic.end_location);
    let parse = |end: usize| {
        let source = text.get(start..end).filter(|s| !s.is_empty())?;
        parser::parse_expression(source).ok().map(|p| (end, p))
    };
    // A range over a whole `target = value` ends at its `=`; a target that
    // cannot be read back leaves the message as it is.
    let Some((end, parsed)) = parse(end).or_else(|| {
        let eq = start + text.get(start..end)?.find('=')?;
        parse(start + text[start..eq].trim_end().len())
    }) else {
        return diagnostic;
    };
    let target = parsed.syntax().body.as_ref();
    // A fallback names the target by its source; CPython by its kind.
    let name = if text[start..end].trim() == name.trim() {
        crate::delete_target_expr_name(target)
    } else {
        name
    };
    diagnostic.error =
        parser::ParseErrorType::OtherError(if takes_hint(text, target, start, end) {
            format!("cannot assign to {name}{HINT}")
        } else {
            format!("cannot assign to {name}")
        });
    diagnostic
}

/// "Perhaps you forgot a comma?" is `invalid_expression`'s, tried where an
/// `expression` is parsed; a comprehension's iterable (`for x in range 10`)
/// is a `disjunction`, and CPython says only "invalid syntax" there.
pub(crate) fn comma_hint(
    mut diagnostic: NormalizedParseDiagnostic,
    source_file: &SourceFile,
) -> NormalizedParseDiagnostic {
    if !matches!(&diagnostic.error, parser::ParseErrorType::OtherError(m)
        if m == "invalid syntax. Perhaps you forgot a comma?")
    {
        return diagnostic;
    }
    let text = source_file.source_text();
    let start = byte_offset(source_file, diagnostic.location);
    let head = text[..start].trim_end();
    let after_in = head
        .strip_suffix("in")
        .is_some_and(|h| h.ends_with([' ', '\t', ')', ']', '}']));
    if after_in && comprehension_clause(head.as_bytes()) {
        diagnostic.error = parser::ParseErrorType::OtherError("invalid syntax".to_owned());
    }
    diagnostic
}

/// Whether a `for` keyword stands between the innermost open bracket and the
/// end of `head`.
fn comprehension_clause(head: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut index = head.len();
    while index > 0 {
        index -= 1;
        match head[index] {
            b')' | b']' | b'}' => depth += 1,
            b'(' | b'[' | b'{' if depth == 0 => return false,
            b'(' | b'[' | b'{' => depth -= 1,
            b'\n' if depth == 0 => return false,
            b'f' if depth == 0
                && head[index..].starts_with(b"for")
                && head.get(index + 3).is_some_and(|c| c.is_ascii_whitespace())
                && (index == 0 || !crate::is_ascii_identifier_char(head[index - 1])) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// Whether `target`, the source from `start` to `end`, takes the hint.
fn takes_hint(text: &str, target: &ast::Expr, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    // Walk back over the parentheses of a group to the statement's start.
    let mut before = start;
    let mut groups = 0;
    loop {
        before = trim_end_horizontal_whitespace(bytes, 0, before);
        if before > 0 && bytes[before - 1] == b'(' {
            groups += 1;
            before -= 1;
        } else {
            break;
        }
    }
    // A statement's start, or a condition (also a `named_expression`).
    let opens = before == 0
        || matches!(bytes[before - 1], b'\n' | b'\r' | b';' | b':')
        || ["if", "elif", "while"].into_iter().any(|word| {
            text[..before]
                .strip_suffix(word)
                .is_some_and(|head| !head.ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        });
    if !opens {
        return false;
    }
    let mut after = end;
    for _ in 0..groups {
        after = skip_horizontal_whitespace(bytes, after);
        if bytes.get(after) != Some(&b')') {
            return false;
        }
        after += 1;
    }
    let excluded = match target {
        ast::Expr::List(_)
        | ast::Expr::Tuple(_)
        | ast::Expr::Generator(_)
        | ast::Expr::BooleanLiteral(_)
        | ast::Expr::NoneLiteral(_) => true,
        // A group is an atom whatever it holds.
        _ if groups > 0 => false,
        ast::Expr::Compare(_)
        | ast::Expr::BoolOp(_)
        | ast::Expr::Lambda(_)
        | ast::Expr::If(_)
        | ast::Expr::Named(_)
        | ast::Expr::Starred(_)
        | ast::Expr::Yield(_)
        | ast::Expr::YieldFrom(_) => true,
        ast::Expr::UnaryOp(unary) => unary.op == ast::UnaryOp::Not,
        _ => false,
    };
    if excluded {
        return false;
    }
    after = skip_horizontal_whitespace(bytes, after);
    if bytes.get(after) != Some(&b'=') || bytes.get(after + 1) == Some(&b'=') {
        return false;
    }
    let value = skip_horizontal_whitespace(bytes, after + 1);
    let rest = &text[value..];
    let starts_with_word = |word: &str| {
        rest.strip_prefix(word)
            .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    if rest.is_empty()
        || matches!(bytes[value], b'*' | b'\n' | b'\r' | b'#' | b';')
        || ["yield", "lambda", "not"].into_iter().any(starts_with_word)
    {
        return false;
    }
    !assigns_again(bytes, value)
}

/// Whether the statement from `index` on holds another top-level `=` or `:=`.
fn assigns_again(bytes: &[u8], mut index: usize) -> bool {
    let mut depth = 0usize;
    while index < bytes.len() {
        match bytes[index] {
            b'#' => {
                while index < bytes.len() && bytes[index] != b'\n' {
                    index += 1;
                }
                continue;
            }
            b'\'' | b'"' => {
                index = skip_quoted_string(bytes, index);
                continue;
            }
            b'\\' => index += 1,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' | b';' if depth == 0 => return false,
            // A condition's `:` ends it; `:=` assigns.
            b':' if depth == 0 => return bytes.get(index + 1) == Some(&b'='),
            b'=' if depth == 0 => {
                let prev = index.checked_sub(1).map(|i| bytes[i]);
                let next = bytes.get(index + 1).copied();
                let compare = next == Some(b'=') || matches!(prev, Some(b'=' | b'!' | b'<' | b'>'));
                let augmented = matches!(
                    prev,
                    Some(b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'@')
                );
                if !compare && !augmented {
                    return true;
                }
                if next == Some(b'=') {
                    index += 1;
                }
            }
            _ => {}
        }
        index += 1;
    }
    false
}

/// The byte a diagnostic's location (line, character) points at.
fn byte_offset(source_file: &SourceFile, location: SourceLocation) -> usize {
    source_file
        .index()
        .offset(location, source_file.source_text(), PositionEncoding::Utf32)
        .to_usize()
}

/// What CPython says about a starred expression the parser refused: one
/// alone in parentheses is `invalid_group` ("cannot use starred expression
/// here"); a `*` with no expression after it is `invalid_starred_expression`
/// ("Invalid star expression").
pub(crate) fn starred_diagnostic(
    error: &parser::ParseError,
    source_file: &SourceFile,
) -> Option<NormalizedParseDiagnostic> {
    let text = source_file.source_text();
    let bytes = text.as_bytes();
    if matches!(
        error.error,
        parser::ParseErrorType::InvalidStarredExpressionUsage
    ) {
        let (start, end) = (
            error.location.start().to_usize(),
            error.location.end().to_usize(),
        );
        let before = trim_end_horizontal_whitespace(bytes, 0, start);
        let after = skip_horizontal_whitespace(bytes, end);
        if bytes.get(start) == Some(&b'*')
            && before > 0
            && bytes[before - 1] == b'('
            && bytes.get(after) == Some(&b')')
        {
            return Some(other(
                source_file,
                "cannot use starred expression here",
                start,
                end,
            ));
        }
    }
    // A `*` in a subscript whose operand is not an expression, at or before
    // where the parser gave up.
    let limit = error.location.end().to_usize().min(bytes.len());
    let mut index = 0;
    while index < limit {
        match bytes[index] {
            b'#' => {
                while index < bytes.len() && bytes[index] != b'\n' {
                    index += 1;
                }
                continue;
            }
            b'\'' | b'"' => {
                index = skip_quoted_string(bytes, index);
                continue;
            }
            b'*' if starred_position(bytes, index) => {
                // CPython reports where the operand fails: at once when
                // there is none, else where the parser stopped inside it.
                let operand = skip_horizontal_whitespace(bytes, index + 1);
                let failed_at = match bytes.get(operand) {
                    None | Some(b':' | b']' | b')' | b'}' | b',' | b'=' | b'\n') => Some(operand),
                    Some(b'(') => crate::matching_delimiter(bytes, operand, b')')
                        .and_then(|close| text.get(operand + 1..close))
                        .filter(|inner| {
                            !inner.trim().is_empty()
                                && parser::parse_expression(inner.trim()).is_err()
                        })
                        .map(|_| error.location.start().to_usize().max(operand)),
                    _ => None,
                };
                if let Some(at) = failed_at {
                    let at = at.min(bytes.len());
                    let end = (at + 1).min(bytes.len());
                    return Some(other(source_file, "Invalid star expression", at, end));
                }
            }
            _ => {}
        }
        index += 1;
    }
    None
}

/// `raise X, Y` (and `yield from x, y`): CPython 3.13 has no rule for the
/// tuple, and its "invalid syntax" points at the first comma.
pub(crate) fn unparenthesized_tuple(
    error: &parser::ParseError,
    source_file: &SourceFile,
) -> Option<NormalizedParseDiagnostic> {
    if !matches!(
        error.error,
        parser::ParseErrorType::UnparenthesizedTupleExpression
    ) {
        return None;
    }
    let bytes = source_file.source_text().as_bytes();
    let (start, end) = (
        error.location.start().to_usize(),
        error.location.end().to_usize().min(bytes.len()),
    );
    let mut depth = 0usize;
    let mut index = start;
    while index < end {
        match bytes[index] {
            b'\'' | b'"' => {
                index = skip_quoted_string(bytes, index);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                return Some(other(source_file, "invalid syntax", index, index + 1));
            }
            _ => {}
        }
        index += 1;
    }
    None
}

/// `with (a as b)` and a line break where the `:` belongs: CPython 3.13's
/// `invalid_with_stmt` says "expected ':'" (the parser read the group as
/// two expressions missing a comma).
pub(crate) fn with_missing_colon(
    error: &parser::ParseError,
    source_file: &SourceFile,
) -> Option<NormalizedParseDiagnostic> {
    let text = source_file.source_text();
    let bytes = text.as_bytes();
    let at = error.location.start().to_usize().min(text.len());
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let header = text[line_start..].trim_start_matches([' ', '\t']);
    let header = header.strip_prefix("async").map_or(header, str::trim_start);
    let rest = header.strip_prefix("with")?;
    let open = text.len() - rest.trim_start().len();
    if !rest.starts_with([' ', '\t', '(']) || bytes.get(open) != Some(&b'(') {
        return None;
    }
    let close = crate::matching_delimiter(bytes, open, b')')?;
    let after = skip_horizontal_whitespace(bytes, close + 1);
    matches!(bytes.get(after), None | Some(b'\n' | b'\r' | b'#'))
        .then(|| other(source_file, "expected ':'", after, after))
}

/// Errors CPython reports before any later one the scans above would find:
/// the parser's own message stands (`def f(/, a, b=, c)`).
pub(crate) fn parser_error_first(error: &parser::ParseError) -> bool {
    matches!(
        &error.error,
        parser::ParseErrorType::OtherError(message)
            if message == "Position-only parameter separator not allowed as first parameter"
    )
}

/// A `*` that opens a subscript (`a[*`), where CPython 3.13 takes a
/// `starred_expression`; not a `**`.
fn starred_position(bytes: &[u8], star: usize) -> bool {
    if bytes.get(star + 1) == Some(&b'*') {
        return false;
    }
    let before = trim_end_horizontal_whitespace(bytes, 0, star);
    if before < 2 || bytes[before - 1] != b'[' {
        return false;
    }
    // A subscript follows what ends an expression; a list display does not.
    let prev = bytes[before - 2];
    prev.is_ascii_alphanumeric() || matches!(prev, b'_' | b')' | b']' | b'\'' | b'"')
}

fn other(
    source_file: &SourceFile,
    message: &str,
    start: usize,
    end: usize,
) -> NormalizedParseDiagnostic {
    // Offsets fit in u32: the lexer refused anything larger before this ran.
    let range = TextRange::new((start as u32).into(), (end as u32).into());
    let (location, end_location) = source_locations(source_file, range.start(), range.end());
    NormalizedParseDiagnostic::new(
        parser::ParseErrorType::OtherError(message.to_owned()),
        location,
        end_location,
    )
}
