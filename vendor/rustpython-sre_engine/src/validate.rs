//! Toolgate (PATCHES.md 1): compiled code checked before a pattern exists,
//! as CPython's `_validate` does (`Modules/_sre/sre.c`, "Code validation").
//!
//! The engine trusts its code: skips, jumps and group numbers steer both the
//! code position and the subject cursor. `_sre.compile` takes the code as a
//! plain list, so a script can hand it anything; CPython refuses what its
//! compiler could not have emitted with `RuntimeError("invalid SRE code")`,
//! and so does `_sre.compile` here, by calling [`validate`].
//!
//! This is a port of `_validate_outer`, `_validate_inner` and
//! `_validate_charset` on indices: `pc` is the next word to read, `end` the
//! first word past the range being checked. Every `code + skip - k` of the C
//! code is computed with checked arithmetic, and a range whose end comes
//! before its start is refused (what CPython's `if (code > end) FAIL`
//! amounts to).
//!
//! On top of CPython's checks, the optimisation block at the start of the
//! code (`INFO` with a literal prefix, which [`crate::State::search`] acts on)
//! must be what `re._compiler._compile_info` emits; CPython leaves these
//! unchecked, and its engine then reads past the subject just as this one
//! did (Toolgate's own rules, marked below):
//! 1. the prefix is not empty;
//! 2. its skip is at most its length, and all of it when the block says the
//!    prefix is the whole pattern (`SRE_INFO_LITERAL`, where the search
//!    returns the match without running any code);
//! 3. the code right after the block holds that many `LITERAL prefix[i]`
//!    pairs, which the search's jump over `2 * skip` code words and `skip`
//!    characters stands for;
//! 4. the overlap table is the prefix's own (`_generate_overlap_table`).
//!
//! Sub-ranges nest at most [`MAX_DEPTH`] deep, so that crafted code cannot
//! exhaust the native stack (the port recurses where CPython's does); `re`'s
//! parser gives up long before (Python's recursion limit).

use crate::constants::{SreAtCode, SreCatCode, SreInfo, SreOpcode};
use crate::{MAXGROUPS, MAXREPEAT};

/// Code that CPython's `_validate`, or one of Toolgate's prefix rules,
/// refuses. `_sre.compile` raises `RuntimeError("invalid SRE code")` for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidCode;

type Checked<T = ()> = Result<T, InvalidCode>;

/// How deep ranges may nest (`BRANCH`, `REPEAT`, `ASSERT`, ... inside one
/// another). `re`'s parser gives up below 500 levels of groups (Python's
/// recursion limit), so no pattern it compiles comes close.
pub const MAX_DEPTH: usize = 1_000;

/// Checks `code` for a pattern with `groups` capturing groups, as
/// `_sre.compile` must before it builds the pattern.
pub fn validate(code: &[u32], groups: usize) -> Result<(), InvalidCode> {
    if groups > MAXGROUPS || code.last() != Some(&(SreOpcode::SUCCESS as u32)) {
        return Err(InvalidCode);
    }
    let v = Validator { code, groups };
    match v.inner(0, code.len() - 1, 0)? {
        Ends::Plain => Ok(()),
        // A JUMP may only end a branch alternative or a conditional's
        // "then" part, never the pattern.
        Ends::Jump => Err(InvalidCode),
    }
}

/// How a range ended: `_validate_inner`'s 0 and 1.
#[derive(PartialEq, Eq)]
enum Ends {
    Plain,
    Jump,
}

struct Validator<'a> {
    code: &'a [u32],
    groups: usize,
}

/// Reading within one range: `GET_OP`, `GET_ARG` and `GET_SKIP_ADJ`.
struct Reader<'a> {
    code: &'a [u32],
    pc: usize,
    end: usize,
}

impl Reader<'_> {
    /// The next word (an opcode or an argument).
    fn word(&mut self) -> Checked<u32> {
        if self.pc >= self.end {
            return Err(InvalidCode);
        }
        let w = self.code[self.pc];
        self.pc += 1;
        Ok(w)
    }

    /// A skip: `skip - adj` (in 32-bit arithmetic, as in C) must not
    /// reach past the range, counted from the skip's own word.
    fn skip(&mut self, adj: u32) -> Checked<usize> {
        if self.pc >= self.end {
            return Err(InvalidCode);
        }
        let skip = self.code[self.pc];
        if skip.wrapping_sub(adj) as usize > self.end - self.pc {
            return Err(InvalidCode);
        }
        self.pc += 1;
        Ok(skip as usize)
    }

    /// `pc + skip - back`, the end of a sub-range (or a jump target).
    fn ahead(&self, skip: usize, back: usize) -> Checked<usize> {
        (self.pc + skip).checked_sub(back).ok_or(InvalidCode)
    }
}

fn is_op(word: u32, op: SreOpcode) -> bool {
    word == op as u32
}

impl Validator<'_> {
    fn charset(&self, pc: usize, end: usize) -> Checked {
        if pc > end {
            return Err(InvalidCode);
        }
        let mut r = Reader {
            code: self.code,
            pc,
            end,
        };
        while r.pc < r.end {
            let op = SreOpcode::try_from(r.word()?).map_err(|_| InvalidCode)?;
            match op {
                SreOpcode::NEGATE => {}
                SreOpcode::LITERAL => {
                    r.word()?;
                }
                SreOpcode::RANGE | SreOpcode::RANGE_UNI_IGNORE => {
                    r.word()?;
                    r.word()?;
                }
                SreOpcode::CHARSET => {
                    // A 256-bit bitmap.
                    if 8 > r.end - r.pc {
                        return Err(InvalidCode);
                    }
                    r.pc += 8;
                }
                SreOpcode::BIGCHARSET => {
                    let blocks = r.word()? as usize;
                    // 256 one-byte block numbers, each naming a block that exists.
                    if 64 > r.end - r.pc {
                        return Err(InvalidCode);
                    }
                    let table = &self.code[r.pc..r.pc + 64];
                    if table
                        .iter()
                        .flat_map(|w| w.to_ne_bytes())
                        .any(|b| b as usize >= blocks)
                    {
                        return Err(InvalidCode);
                    }
                    r.pc += 64;
                    // Then the blocks, 256 bits each. (CPython computes this
                    // size in 32 bits, which can wrap; here it cannot.)
                    let size = blocks.checked_mul(8).ok_or(InvalidCode)?;
                    if size > r.end - r.pc {
                        return Err(InvalidCode);
                    }
                    r.pc += size;
                }
                SreOpcode::CATEGORY => {
                    SreCatCode::try_from(r.word()?).map_err(|_| InvalidCode)?;
                }
                _ => return Err(InvalidCode),
            }
        }
        Ok(())
    }

    fn inner(&self, pc: usize, end: usize, depth: usize) -> Checked<Ends> {
        if pc > end || depth > MAX_DEPTH {
            return Err(InvalidCode);
        }
        let depth = depth + 1;
        let mut r = Reader {
            code: self.code,
            pc,
            end,
        };
        while r.pc < r.end {
            let at = r.pc;
            let op = SreOpcode::try_from(r.word()?).map_err(|_| InvalidCode)?;
            match op {
                SreOpcode::MARK => {
                    // Marks need not nest properly: the engine copes, as
                    // CPython's does, with nonsense results at worst.
                    if r.word()? as usize > 2 * self.groups + 1 {
                        return Err(InvalidCode);
                    }
                }
                SreOpcode::LITERAL
                | SreOpcode::NOT_LITERAL
                | SreOpcode::LITERAL_IGNORE
                | SreOpcode::NOT_LITERAL_IGNORE
                | SreOpcode::LITERAL_UNI_IGNORE
                | SreOpcode::NOT_LITERAL_UNI_IGNORE
                | SreOpcode::LITERAL_LOC_IGNORE
                | SreOpcode::NOT_LITERAL_LOC_IGNORE => {
                    r.word()?;
                }
                SreOpcode::SUCCESS | SreOpcode::FAILURE => {}
                SreOpcode::AT => {
                    SreAtCode::try_from(r.word()?).map_err(|_| InvalidCode)?;
                }
                SreOpcode::ANY | SreOpcode::ANY_ALL => {}
                SreOpcode::IN
                | SreOpcode::IN_IGNORE
                | SreOpcode::IN_UNI_IGNORE
                | SreOpcode::IN_LOC_IGNORE => {
                    let skip = r.skip(0)?;
                    // The set, then the FAILURE that ends it.
                    let stop = r.ahead(skip, 2)?;
                    self.charset(r.pc, stop)?;
                    if stop >= r.end || !is_op(self.code[stop], SreOpcode::FAILURE) {
                        return Err(InvalidCode);
                    }
                    r.pc = stop + 1;
                }
                SreOpcode::INFO => self.info(&mut r, at)?,
                SreOpcode::BRANCH => {
                    let mut target = None;
                    loop {
                        let skip = r.skip(0)?;
                        if skip == 0 {
                            break;
                        }
                        // An alternative, then a JUMP to the common target.
                        let stop = r.ahead(skip, 3)?;
                        if self.inner(r.pc, stop, depth)? != Ends::Plain {
                            return Err(InvalidCode);
                        }
                        r.pc = stop;
                        if !is_op(r.word()?, SreOpcode::JUMP) {
                            return Err(InvalidCode);
                        }
                        let skip = r.skip(0)?;
                        let to = r.ahead(skip, 1)?;
                        if *target.get_or_insert(to) != to {
                            return Err(InvalidCode);
                        }
                    }
                    if target != Some(r.pc) {
                        return Err(InvalidCode);
                    }
                }
                SreOpcode::REPEAT_ONE
                | SreOpcode::MIN_REPEAT_ONE
                | SreOpcode::POSSESSIVE_REPEAT_ONE => {
                    let skip = r.skip(0)?;
                    self.repeat_bounds(&mut r)?;
                    // The item, then SUCCESS.
                    let stop = r.ahead(skip, 4)?;
                    if self.inner(r.pc, stop, depth)? != Ends::Plain {
                        return Err(InvalidCode);
                    }
                    r.pc = stop;
                    if !is_op(r.word()?, SreOpcode::SUCCESS) {
                        return Err(InvalidCode);
                    }
                }
                SreOpcode::REPEAT | SreOpcode::POSSESSIVE_REPEAT => {
                    let skip = r.skip(0)?;
                    self.repeat_bounds(&mut r)?;
                    // The body, then the UNTIL the engine jumps to first.
                    let stop = r.ahead(skip, 3)?;
                    if self.inner(r.pc, stop, depth)? != Ends::Plain {
                        return Err(InvalidCode);
                    }
                    r.pc = stop;
                    let until = r.word()?;
                    let ok = if op == SreOpcode::POSSESSIVE_REPEAT {
                        is_op(until, SreOpcode::SUCCESS)
                    } else {
                        is_op(until, SreOpcode::MAX_UNTIL) || is_op(until, SreOpcode::MIN_UNTIL)
                    };
                    if !ok {
                        return Err(InvalidCode);
                    }
                }
                SreOpcode::ATOMIC_GROUP => {
                    let skip = r.skip(0)?;
                    let stop = r.ahead(skip, 2)?;
                    if self.inner(r.pc, stop, depth)? != Ends::Plain {
                        return Err(InvalidCode);
                    }
                    r.pc = stop;
                    if !is_op(r.word()?, SreOpcode::SUCCESS) {
                        return Err(InvalidCode);
                    }
                }
                SreOpcode::GROUPREF
                | SreOpcode::GROUPREF_IGNORE
                | SreOpcode::GROUPREF_UNI_IGNORE
                | SreOpcode::GROUPREF_LOC_IGNORE => {
                    if r.word()? as usize >= self.groups {
                        return Err(InvalidCode);
                    }
                }
                SreOpcode::GROUPREF_EXISTS => {
                    // <GROUPREF_EXISTS> <group> <skip> then-part
                    //   [<JUMP> <skipno> else-part]
                    // The skip counts from the group's word, and a JUMP that
                    // ends the "then" part is what says an "else" follows.
                    if r.word()? as usize >= self.groups {
                        return Err(InvalidCode);
                    }
                    let skip = r.skip(1)?;
                    let base = r.pc - 1;
                    let then_end = (base + skip).checked_sub(1).ok_or(InvalidCode)?;
                    let mut ends = self.inner(base + 1, then_end, depth)?;
                    let mut after = then_end;
                    if ends == Ends::Jump {
                        // At <skipno>, right after the JUMP.
                        r.pc = (base + skip).checked_sub(2).ok_or(InvalidCode)?;
                        let skip = r.skip(0)?;
                        let else_end = r.ahead(skip, 1)?;
                        ends = self.inner(r.pc, else_end, depth)?;
                        after = else_end;
                    }
                    if ends != Ends::Plain {
                        return Err(InvalidCode);
                    }
                    r.pc = after;
                }
                SreOpcode::ASSERT | SreOpcode::ASSERT_NOT => {
                    // <ASSERT> <skip> <width> body <SUCCESS>; the width
                    // (0 for a lookahead) needs no check.
                    let skip = r.skip(0)?;
                    r.word()?;
                    let base = r.pc - 1;
                    let stop = (base + skip).checked_sub(2).ok_or(InvalidCode)?;
                    if self.inner(base + 1, stop, depth)? != Ends::Plain {
                        return Err(InvalidCode);
                    }
                    r.pc = stop;
                    if !is_op(r.word()?, SreOpcode::SUCCESS) {
                        return Err(InvalidCode);
                    }
                }
                SreOpcode::JUMP => {
                    // Only as the last op of a range (its skip word is the
                    // last word); the caller checks where it goes.
                    if r.pc + 1 != r.end {
                        return Err(InvalidCode);
                    }
                    return Ok(Ends::Jump);
                }
                // CHARSET, BIGCHARSET, NEGATE, RANGE and RANGE_UNI_IGNORE
                // belong in a set; MAX_UNTIL and MIN_UNTIL only end a REPEAT
                // (read above); SUBPATTERN is never emitted.
                _ => return Err(InvalidCode),
            }
        }
        Ok(Ends::Plain)
    }

    fn repeat_bounds(&self, r: &mut Reader<'_>) -> Checked {
        let min = r.word()?;
        let max = r.word()?;
        if min > max || max as usize > MAXREPEAT {
            return Err(InvalidCode);
        }
        Ok(())
    }

    /// `<INFO> <skip> <flags> <min> <max> [<len> <skip> prefix overlap | charset]`;
    /// `r` is past the opcode, which was at `at`.
    fn info(&self, r: &mut Reader<'_>, at: usize) -> Checked {
        let skip = r.skip(0)?;
        let block_end = r.ahead(skip, 1)?;
        let flags = r.word()?;
        r.word()?; // min
        r.word()?; // max
        // Past the fixed fields: a block too short for them ends before here.
        if block_end < r.pc {
            return Err(InvalidCode);
        }
        let Some(flags) = SreInfo::from_bits(flags) else {
            return Err(InvalidCode);
        };
        if flags.contains(SreInfo::PREFIX | SreInfo::CHARSET)
            || (flags.contains(SreInfo::LITERAL) && !flags.contains(SreInfo::PREFIX))
        {
            return Err(InvalidCode);
        }
        if flags.contains(SreInfo::PREFIX) {
            let len = r.word()? as usize;
            let prefix_skip = r.word()? as usize;
            if block_end < r.pc || len > block_end - r.pc {
                return Err(InvalidCode);
            }
            let prefix = &self.code[r.pc..r.pc + len];
            r.pc += len;
            if len > block_end - r.pc {
                return Err(InvalidCode);
            }
            let overlap = &self.code[r.pc..r.pc + len];
            if overlap.iter().any(|&o| o as usize >= len) {
                return Err(InvalidCode);
            }
            r.pc += len;
            if at == 0 {
                let literal = flags.contains(SreInfo::LITERAL);
                self.prefix_rules(prefix, prefix_skip, literal, overlap, block_end, r.end)?;
            }
        }
        if flags.contains(SreInfo::CHARSET) {
            if block_end <= r.pc {
                return Err(InvalidCode);
            }
            self.charset(r.pc, block_end - 1)?;
            if !is_op(self.code[block_end - 1], SreOpcode::FAILURE) {
                return Err(InvalidCode);
            }
            r.pc = block_end;
        } else if r.pc != block_end {
            return Err(InvalidCode);
        }
        Ok(())
    }

    /// Toolgate's rules for the search's prefix (see the module's doc):
    /// what [`crate::State::search`] assumes of the block at code\[0\].
    fn prefix_rules(
        &self,
        prefix: &[u32],
        prefix_skip: usize,
        literal: bool,
        overlap: &[u32],
        after: usize,
        end: usize,
    ) -> Checked {
        let len = prefix.len();
        // Rules 1 and 2.
        if len == 0 || prefix_skip > len || (literal && prefix_skip != len) {
            return Err(InvalidCode);
        }
        // Rule 3: the skipped code matches exactly the skipped characters.
        if prefix_skip > (end - after) / 2 {
            return Err(InvalidCode);
        }
        for (i, &c) in prefix[..prefix_skip].iter().enumerate() {
            let op = after + 2 * i;
            if !is_op(self.code[op], SreOpcode::LITERAL) || self.code[op + 1] != c {
                return Err(InvalidCode);
            }
        }
        // Rule 4: `_generate_overlap_table(prefix)`, each entry checked with
        // the entries before it (already known right, so each is < its index).
        if overlap[0] != 0 {
            return Err(InvalidCode);
        }
        for i in 1..len {
            let mut idx = overlap[i - 1] as usize;
            let want = loop {
                if prefix[i] == prefix[idx] {
                    break idx + 1;
                }
                if idx == 0 {
                    break 0;
                }
                idx = overlap[idx - 1] as usize;
            };
            if overlap[i] as usize != want {
                return Err(InvalidCode);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u32 = SreOpcode::SUCCESS as u32;

    #[test]
    fn cpython_refuses_these_and_so_does_this() {
        // Checked on CPython 3.11 and 3.13: each is "invalid SRE code".
        assert_eq!(validate(&[48, 1 << 31, 7, 1, 99], 3), Err(InvalidCode));
        assert_eq!(validate(&[17, 99, 1], 0), Err(InvalidCode));
        assert_eq!(validate(&[], 0), Err(InvalidCode));
        assert_eq!(validate(&[16, 97], 0), Err(InvalidCode));
        // A bare MAX_UNTIL (no REPEAT before it).
        assert_eq!(validate(&[18, S], 0), Err(InvalidCode));
        // Too many groups.
        assert_eq!(validate(&[S], MAXGROUPS + 1), Err(InvalidCode));
    }

    #[test]
    fn what_the_compiler_emits_passes() {
        // re.compile('a').  INFO(4: PREFIX|LITERAL len 1 skip 1 'a' [0]) LITERAL a
        let a = [14, 8, 3, 1, 1, 1, 1, 97, 0, 16, 97, S];
        assert_eq!(validate(&a, 0), Ok(()));
        // re.compile('(a)|b') (CPython 3.13): INFO, then a BRANCH.
        let alt = [
            14, 4, 0, 1, 1, 7, 9, 17, 0, 16, 97, 17, 1, 15, 7, 5, 16, 98, 15, 2, 0, S,
        ];
        assert_eq!(validate(&alt, 1), Ok(()));
        assert_eq!(validate(&[S], 0), Ok(()));
    }

    #[test]
    fn the_prefix_rules_refuse_what_cpython_lets_through() {
        // The red team's program: prefix 'a' whose skip (64) passes its length.
        let mut code = alloc::vec![14, 8, 1, 1, 1, 1, 64, 97, 0];
        for _ in 0..64 {
            code.extend([16, 97]);
        }
        code.extend([16, 120, S]);
        assert_eq!(validate(&code, 0), Err(InvalidCode));
        // An empty prefix (CPython accepts it; the engine read prefix[0]).
        assert_eq!(validate(&[14, 6, 1, 0, 0, 0, 0, S], 0), Err(InvalidCode));
        // A skip over code that is not the prefix's literals.
        assert_eq!(
            validate(&[14, 8, 1, 1, 1, 1, 1, 97, 0, 16, 98, S], 0),
            Err(InvalidCode)
        );
        // The whole pattern a literal, yet only part of it skipped: an empty
        // match at every 'a', so `finditer` never moved on.
        assert_eq!(
            validate(&[14, 8, 3, 1, 1, 1, 0, 46, 0, 16, 46, S], 0),
            Err(InvalidCode)
        );
        // A made-up overlap table ('aa' has [0, 1]).
        let aa = |t1| [14, 10, 1, 2, 2, 2, 2, 97, 97, 0, t1, 16, 97, 16, 97, S];
        assert_eq!(validate(&aa(1), 0), Ok(()));
        assert_eq!(validate(&aa(0), 0), Err(InvalidCode));
    }

    #[test]
    fn nesting_deeper_than_the_bound_is_refused() {
        // ATOMIC_GROUP <skip> body SUCCESS, nested n deep around LITERAL a.
        let nest = |n: usize| {
            let mut code = alloc::vec![16, 97];
            for _ in 0..n {
                let mut outer = alloc::vec![27, code.len() as u32 + 2];
                outer.extend(&code);
                outer.push(S);
                code = outer;
            }
            code.push(S);
            code
        };
        assert_eq!(validate(&nest(MAX_DEPTH - 1), 0), Ok(()));
        assert_eq!(validate(&nest(MAX_DEPTH + 1), 0), Err(InvalidCode));
    }
}
