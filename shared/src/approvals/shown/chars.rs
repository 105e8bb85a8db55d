//! The characters marked one by one, by kind, and the ranges marked
//! whole: the table the inbox page's script gets too (`names_json`).

/// Why a character is marked: each kind has its own warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Rlo,
    Bidi,
    Control,
    Invisible,
    Tag,
    Space,
}

impl Kind {
    pub(super) fn code(self) -> &'static str {
        match self {
            Self::Rlo => "rlo",
            Self::Bidi => "bidi",
            Self::Control => "control",
            Self::Invisible => "invisible",
            Self::Tag => "tag",
            Self::Space => "space",
        }
    }

    pub(super) fn warning(self) -> &'static str {
        match self {
            Self::Rlo => "holds a right-to-left override",
            Self::Bidi => "holds text-direction controls",
            Self::Control => "holds control characters",
            Self::Invisible => "holds invisible characters",
            Self::Tag => "holds invisible tag characters",
            Self::Space => "holds space characters other than a plain space",
        }
    }
}

/// Characters marked one by one, by kind: code point, short name (empty:
/// the marker shows only `U+XXXX`), Unicode name; each list sorted. C1
/// controls, tag characters and variation selectors are computed
/// ([`special`]); U+202E is the bidi control with a warning of its own.
pub(super) type List = &'static [(u32, &'static str, &'static str)];
pub(super) const CONTROLS: List = &[
    (0x00, "NUL", "NULL"),
    (0x01, "SOH", "START OF HEADING"),
    (0x02, "STX", "START OF TEXT"),
    (0x03, "ETX", "END OF TEXT"),
    (0x04, "EOT", "END OF TRANSMISSION"),
    (0x05, "ENQ", "ENQUIRY"),
    (0x06, "ACK", "ACKNOWLEDGE"),
    (0x07, "BEL", "BELL"),
    (0x08, "BS", "BACKSPACE"),
    (0x0B, "VT", "LINE TABULATION"),
    (0x0C, "FF", "FORM FEED"),
    (0x0D, "CR", "CARRIAGE RETURN"),
    (0x0E, "SO", "SHIFT OUT"),
    (0x0F, "SI", "SHIFT IN"),
    (0x10, "DLE", "DATA LINK ESCAPE"),
    (0x11, "DC1", "DEVICE CONTROL ONE"),
    (0x12, "DC2", "DEVICE CONTROL TWO"),
    (0x13, "DC3", "DEVICE CONTROL THREE"),
    (0x14, "DC4", "DEVICE CONTROL FOUR"),
    (0x15, "NAK", "NEGATIVE ACKNOWLEDGE"),
    (0x16, "SYN", "SYNCHRONOUS IDLE"),
    (0x17, "ETB", "END OF TRANSMISSION BLOCK"),
    (0x18, "CAN", "CANCEL"),
    (0x19, "EM", "END OF MEDIUM"),
    (0x1A, "SUB", "SUBSTITUTE"),
    (0x1B, "ESC", "ESCAPE"),
    (0x1C, "FS", "INFORMATION SEPARATOR FOUR"),
    (0x1D, "GS", "INFORMATION SEPARATOR THREE"),
    (0x1E, "RS", "INFORMATION SEPARATOR TWO"),
    (0x1F, "US", "INFORMATION SEPARATOR ONE"),
    (0x7F, "DEL", "DELETE"),
    (0x85, "NEL", "NEXT LINE"),
    (0x9B, "CSI", "CONTROL SEQUENCE INTRODUCER"),
];
pub(super) const BIDI: List = &[
    (0x061C, "ALM", "ARABIC LETTER MARK"),
    (0x200E, "LRM", "LEFT-TO-RIGHT MARK"),
    (0x200F, "RLM", "RIGHT-TO-LEFT MARK"),
    (0x202A, "LRE", "LEFT-TO-RIGHT EMBEDDING"),
    (0x202B, "RLE", "RIGHT-TO-LEFT EMBEDDING"),
    (0x202C, "PDF", "POP DIRECTIONAL FORMATTING"),
    (0x202D, "LRO", "LEFT-TO-RIGHT OVERRIDE"),
    (0x202E, "RLO", "RIGHT-TO-LEFT OVERRIDE"),
    (0x2066, "LRI", "LEFT-TO-RIGHT ISOLATE"),
    (0x2067, "RLI", "RIGHT-TO-LEFT ISOLATE"),
    (0x2068, "FSI", "FIRST STRONG ISOLATE"),
    (0x2069, "PDI", "POP DIRECTIONAL ISOLATE"),
    (0x206A, "", "INHIBIT SYMMETRIC SWAPPING"),
    (0x206B, "", "ACTIVATE SYMMETRIC SWAPPING"),
];
pub(super) const INVISIBLE: List = &[
    (0xAD, "SHY", "SOFT HYPHEN"),
    (0x034F, "CGJ", "COMBINING GRAPHEME JOINER"),
    (0x115F, "", "HANGUL CHOSEONG FILLER"),
    (0x1160, "", "HANGUL JUNGSEONG FILLER"),
    (0x17B4, "", "KHMER VOWEL INHERENT AQ"),
    (0x17B5, "", "KHMER VOWEL INHERENT AA"),
    (0x180E, "MVS", "MONGOLIAN VOWEL SEPARATOR"),
    (0x200B, "ZWSP", "ZERO WIDTH SPACE"),
    (0x200C, "ZWNJ", "ZERO WIDTH NON-JOINER"),
    (0x200D, "ZWJ", "ZERO WIDTH JOINER"),
    (0x2028, "LSEP", "LINE SEPARATOR"),
    (0x2029, "PSEP", "PARAGRAPH SEPARATOR"),
    (0x2060, "WJ", "WORD JOINER"),
    (0x2061, "", "FUNCTION APPLICATION"),
    (0x2062, "", "INVISIBLE TIMES"),
    (0x2063, "", "INVISIBLE SEPARATOR"),
    (0x2064, "", "INVISIBLE PLUS"),
    (0x206C, "", "INHIBIT ARABIC FORM SHAPING"),
    (0x206D, "", "ACTIVATE ARABIC FORM SHAPING"),
    (0x206E, "", "NATIONAL DIGIT SHAPES"),
    (0x206F, "", "NOMINAL DIGIT SHAPES"),
    (0x3164, "", "HANGUL FILLER"),
    (0xFEFF, "BOM", "ZERO WIDTH NO-BREAK SPACE"),
    (0xFFA0, "", "HALFWIDTH HANGUL FILLER"),
    (0xFFF9, "", "INTERLINEAR ANNOTATION ANCHOR"),
    (0xFFFA, "", "INTERLINEAR ANNOTATION SEPARATOR"),
    (0xFFFB, "", "INTERLINEAR ANNOTATION TERMINATOR"),
];
pub(super) const SPACES: List = &[
    (0xA0, "NBSP", "NO-BREAK SPACE"),
    (0x1680, "", "OGHAM SPACE MARK"),
    (0x2000, "", "EN QUAD"),
    (0x2001, "", "EM QUAD"),
    (0x2002, "", "EN SPACE"),
    (0x2003, "", "EM SPACE"),
    (0x2004, "", "THREE-PER-EM SPACE"),
    (0x2005, "", "FOUR-PER-EM SPACE"),
    (0x2006, "", "SIX-PER-EM SPACE"),
    (0x2007, "", "FIGURE SPACE"),
    (0x2008, "", "PUNCTUATION SPACE"),
    (0x2009, "", "THIN SPACE"),
    (0x200A, "", "HAIR SPACE"),
    (0x202F, "NNBSP", "NARROW NO-BREAK SPACE"),
    (0x205F, "MMSP", "MEDIUM MATHEMATICAL SPACE"),
    (0x2800, "", "BRAILLE PATTERN BLANK"),
    (0x3000, "", "IDEOGRAPHIC SPACE"),
];

/// Ranges marked whole, first match wins: C1 controls, tags, and the
/// default-ignorable blocks that no table lists one by one (a renderer
/// shows nothing for them, so a run of them beside spaces reads as blank).
pub(super) const RANGES: &[(u32, u32, &str, Kind)] = &[
    (0x80, 0x9F, "C1 CONTROL", Kind::Control),
    (
        0x180B,
        0x180F,
        "MONGOLIAN FREE VARIATION SELECTOR",
        Kind::Invisible,
    ),
    (
        0x2065,
        0x2065,
        "UNASSIGNED FORMAT CHARACTER",
        Kind::Invisible,
    ),
    (0xFFF0, 0xFFF8, "UNASSIGNED SPECIAL", Kind::Invisible),
    (
        0x13430,
        0x1343F,
        "EGYPTIAN HIEROGLYPH FORMAT CONTROL",
        Kind::Invisible,
    ),
    (
        0x1BCA0,
        0x1BCA3,
        "SHORTHAND FORMAT CONTROL",
        Kind::Invisible,
    ),
    (
        0x1D173,
        0x1D17A,
        "MUSICAL SYMBOL FORMAT CONTROL",
        Kind::Invisible,
    ),
    (0xE0001, 0xE0001, "LANGUAGE TAG", Kind::Tag),
    (0xE007F, 0xE007F, "CANCEL TAG", Kind::Tag),
    (0xE0000, 0xE007F, "TAG CHARACTER", Kind::Tag),
    (
        0xE0080,
        0xE00FF,
        "RESERVED DEFAULT-IGNORABLE",
        Kind::Invisible,
    ),
    (
        0xE01F0,
        0xE0FFF,
        "RESERVED DEFAULT-IGNORABLE",
        Kind::Invisible,
    ),
];

/// Every list with the kind of its characters.
pub(super) const TABLES: [(List, Kind); 4] = [
    (CONTROLS, Kind::Control),
    (BIDI, Kind::Bidi),
    (INVISIBLE, Kind::Invisible),
    (SPACES, Kind::Space),
];
