//! A flow's templates: the text of a send, a pattern or a check split into literal text and
//! the fields filled in per send (`{conn}`, `{seq}`, `{now_us}`, `{rand_u32}`, `{data.NAME}`
//! from the connection's `--data` row, `{var.NAME}` from what the connection captured from
//! earlier replies), and filled in again ([`render_with`]); and the regexes made of them
//! ([`Pattern`]: compiled once, or per send when they hold fields).

use std::borrow::Cow;
use std::time::Instant;

use serde::Serialize;

use crate::config::DataTable;

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Piece {
    Text(String),
    Conn,
    Seq,
    NowUs,
    RandU32,
    /// `{data.NAME}`: the connection's `--data` row's `NAME`.
    Data(String),
    /// `{var.NAME}`: the value the connection captured as `NAME` from an earlier reply.
    Var(String),
}

/// The values a send filled into its template; the patterns and checks of the messages that
/// answer it are filled with the same.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vars {
    pub conn: u64,
    pub seq: u64,
    pub now_us: u128,
    pub rand_u32: u32,
}

impl Vars {
    /// Connection `conn`'s send number `seq`, made at `now`.
    pub fn new(conn: u64, seq: u64, now: Instant) -> Vars {
        Vars { conn, seq, now_us: unix_micros(now), rand_u32: rand::random() }
    }
}

/// The variables one connection captured from replies, by name (a handful: bounded by
/// the compiler, each value too).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured(Vec<(String, String)>);

impl Captured {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(known, _)| known == name).map(|(_, value)| value.as_str())
    }

    /// `name` is now `value` (replacing what it was).
    pub fn set(&mut self, name: &str, value: String) {
        match self.0.iter_mut().find(|(known, _)| known == name) {
            Some(entry) => entry.1 = value,
            None => self.0.push((name.to_owned(), value)),
        }
    }

    /// The first `{var.NAME}` of `pieces` this connection has not captured.
    pub fn missing<'p>(&self, pieces: &'p [Piece]) -> Option<&'p str> {
        pieces.iter().find_map(|piece| match piece {
            Piece::Var(name) if self.get(name).is_none() => Some(name.as_str()),
            _ => None,
        })
    }
}

/// `pieces` filled in with `vars`, connection `vars.conn`'s row of `data` and its
/// `captured` variables (a `{data.NAME}` or `{var.NAME}` with no value stays as written);
/// every value regex-escaped when `escape`.
pub fn render_with(
    pieces: &[Piece],
    vars: &Vars,
    data: Option<&DataTable>,
    captured: &Captured,
    escape: bool,
) -> String {
    let mut text = String::new();
    let value = |text: &mut String, value: &str| match escape {
        true => text.push_str(&regex::escape(value)),
        false => text.push_str(value),
    };
    for piece in pieces {
        match piece {
            Piece::Text(literal) => text.push_str(literal),
            Piece::Conn => text.push_str(&vars.conn.to_string()),
            Piece::Seq => text.push_str(&vars.seq.to_string()),
            Piece::NowUs => text.push_str(&vars.now_us.to_string()),
            Piece::RandU32 => text.push_str(&vars.rand_u32.to_string()),
            Piece::Data(name) => {
                let placeholder = format!("{{data.{name}}}");
                value(&mut text, data.and_then(|data| data.value(vars.conn, name)).unwrap_or(&placeholder));
            }
            Piece::Var(name) => {
                let placeholder = format!("{{var.{name}}}");
                value(&mut text, captured.get(name).unwrap_or(&placeholder));
            }
        }
    }
    text
}

/// µs since the Unix epoch at `now`.
fn unix_micros(now: Instant) -> u128 {
    let ago = Instant::now().saturating_duration_since(now);
    let wall = std::time::SystemTime::now().checked_sub(ago).unwrap_or(std::time::SystemTime::now());
    wall.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros())
}

/// The template as written (`{conn}`, `{data.NAME}`, … where its fields are).
pub fn text_of(pieces: &[Piece]) -> String {
    let mut text = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(literal) => text.push_str(literal),
            Piece::Conn => text.push_str("{conn}"),
            Piece::Seq => text.push_str("{seq}"),
            Piece::NowUs => text.push_str("{now_us}"),
            Piece::RandU32 => text.push_str("{rand_u32}"),
            Piece::Data(name) => text.push_str(&format!("{{data.{name}}}")),
            Piece::Var(name) => text.push_str(&format!("{{var.{name}}}")),
        }
    }
    text
}

/// Splits `{conn}`, `{seq}`, `{now_us}`, `{rand_u32}`, `{data.NAME}` and `{var.NAME}` out
/// of `text`; other braces (JSON) stay.
pub fn template(text: &str) -> Result<Vec<Piece>, String> {
    let fields = [
        ("{conn}", Piece::Conn),
        ("{seq}", Piece::Seq),
        ("{now_us}", Piece::NowUs),
        ("{rand_u32}", Piece::RandU32),
    ];
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let named = |prefix: &str, piece: fn(String) -> Piece| {
            let (name, _) = rest.strip_prefix(prefix)?.split_once('}')?;
            Some((format!("{prefix}{name}}}"), piece(name.to_owned())))
        };
        let field = named("{data.", Piece::Data).or_else(|| named("{var.", Piece::Var)).or_else(|| {
            fields
                .iter()
                .find(|(field, _)| rest.starts_with(field))
                .map(|(f, p)| ((*f).to_owned(), p.clone()))
        });
        match field {
            Some((field, piece)) => {
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(piece);
                rest = &rest[field.len()..];
            }
            None => {
                let c = rest.chars().next().unwrap_or_default();
                literal.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Text(literal));
    }
    if pieces.is_empty() {
        return Err("send is empty".to_owned());
    }
    Ok(pieces)
}

/// The names of the `{var.NAME}` fields of `text`.
pub fn var_names(text: &str) -> Vec<String> {
    let pieces = template(text).unwrap_or_default();
    pieces
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Var(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// The compiled size a pattern may take (a regex is compiled per send when it has fields).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A regex: compiled once, or (when it holds template fields) per send it answers.
#[derive(Debug, Clone)]
pub enum Pattern {
    Fixed(regex::Regex),
    Templated(Vec<Piece>),
}

impl Pattern {
    pub fn compile(text: &str) -> Result<Pattern, String> {
        let pieces = template(text)?;
        if let [Piece::Text(_)] = pieces.as_slice() {
            return Ok(Pattern::Fixed(build(text)?));
        }
        // The fields are numbers or escaped values: any make a valid regex if these do.
        build(&render_with(&pieces, &Vars::default(), None, &Captured::default(), true))?;
        Ok(Pattern::Templated(pieces))
    }

    /// The regex for a message answering the send that filled in `vars`.
    /// `data`: the `--data` table, whose row of `vars.conn` fills `{data.NAME}`; `captured`:
    /// the connection's variables (`{var.NAME}`).
    pub fn regex(&self, vars: &Vars, data: Option<&DataTable>, captured: &Captured) -> Cow<'_, regex::Regex> {
        match self {
            Pattern::Fixed(regex) => Cow::Borrowed(regex),
            Pattern::Templated(pieces) => match build(&render_with(pieces, vars, data, captured, true)) {
                Ok(regex) => Cow::Owned(regex),
                // Checked at compile time with other numbers; cannot fail for these.
                Err(_) => Cow::Owned(regex::Regex::new("$^").expect("a valid regex")),
            },
        }
    }

    fn text(&self) -> String {
        match self {
            Pattern::Fixed(regex) => regex.as_str().to_owned(),
            Pattern::Templated(pieces) => text_of(pieces),
        }
    }
}

impl Serialize for Pattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

fn build(text: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(text)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("bad regex: {}", first_line(&e)))
}

fn first_line(error: &dyn std::fmt::Display) -> String {
    error.to_string().lines().last().unwrap_or("").trim().to_owned()
}
