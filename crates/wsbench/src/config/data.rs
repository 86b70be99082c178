//! `--data FILE.csv` (TOML `data`): per-connection values, as Artillery's `payload` CSV and
//! k6's `SharedArray` give each virtual user its own credentials. The first row names the
//! columns; row `i mod rows` belongs to connection `i`, and `{data.NAME}` in the upgrade
//! request's header values, the URL's path and query, a flow's sends, patterns and checks,
//! and the protocols' templates (through [`crate::protocol::DataRows`], filled once per
//! connection) becomes that row's `NAME`. The file
//! is read within [`MAX_DATA_FILE_BYTES`] and [`MAX_DATA_ROWS`] (whatever it is), parsed as
//! RFC 4180 CSV by the small parser below (quoted fields with commas, doubled quotes and
//! line breaks; CRLF or LF), and every placeholder is checked before the run: a column the
//! file lacks is a usage error naming it and the columns there are.
//!
//! A CSV file is often someone else's data, and a value must never change a request's
//! framing: where a value lands in something framed by characters (a header of the upgrade
//! request), [`DataTable::check_framing`] checks every row's value of each column used there
//! once, before any load, and a value holding CR, LF, NUL (or another character the place
//! cannot carry) is a usage error naming the file, the row, the column and the place. In the
//! URL's path and query a value is percent-encoded ([`DataTable::fill_path`]), so it cannot
//! end the request line; a protocol's templates are checked by the protocol's own rules with
//! each row filled in (`scenario::glue`).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::error::{ConfigError, invalid};
use crate::input_file::{InputFileError, InputKind};

/// The most rows (after the heading) a data file may have.
pub const MAX_DATA_ROWS: usize = 1_000_000;
/// The most columns.
pub const MAX_DATA_COLUMNS: usize = 256;
/// What starts a placeholder.
const OPEN: &str = "{data.";

/// A data file, read and checked: its column names and rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataTable {
    pub path: PathBuf,
    pub columns: Vec<String>,
    rows: Vec<Vec<String>>,
    /// The line of the file each row starts on (a quoted value may span lines).
    lines: Vec<usize>,
}

impl DataTable {
    /// Reads and parses `path`: a heading row of unique, non-empty names, then at least one
    /// row, each with as many fields as the heading.
    pub fn load(path: &Path) -> Result<DataTable, ConfigError> {
        let text = crate::input_file::read_text(path, InputKind::Data).map_err(|e| match e {
            InputFileError::Read { source, .. } => {
                invalid("data", format!("{}: {source}: give a readable CSV file", path.display()))
            }
            too_big => invalid("data", too_big.to_string()),
        })?;
        let bad = |why: String| invalid("data", format!("{}: {why}", path.display()));
        let mut records = parse_csv(&text).map_err(&bad)?.into_iter();
        let (_, columns) =
            records.next().ok_or_else(|| bad("is empty: give a heading row of column names".into()))?;
        if columns.len() > MAX_DATA_COLUMNS {
            return Err(bad(format!("{} columns: at most {MAX_DATA_COLUMNS}", columns.len())));
        }
        for (i, name) in columns.iter().enumerate() {
            if name.is_empty() || name.contains(['{', '}']) || columns[..i].contains(name) {
                return Err(bad(format!(
                    "column {} is named `{name}`: give each column a unique name",
                    i + 1
                )));
            }
        }
        let (lines, rows): (Vec<usize>, Vec<Vec<String>>) = records.unzip();
        if rows.is_empty() {
            return Err(bad("has no row after its heading: give one row per user".into()));
        }
        if rows.len() > MAX_DATA_ROWS {
            return Err(bad(format!("{} rows: at most {MAX_DATA_ROWS}", rows.len())));
        }
        if let Some((n, row)) = rows.iter().enumerate().find(|(_, row)| row.len() != columns.len()) {
            return Err(bad(format!(
                "row {} has {} fields, the heading {}",
                n + 2,
                row.len(),
                columns.len()
            )));
        }
        Ok(DataTable { path: path.to_owned(), columns, rows, lines })
    }

    /// Connection `conn`'s value of column `name` (`None`: the file has no such column).
    pub fn value(&self, conn: u64, name: &str) -> Option<&str> {
        let column = self.columns.iter().position(|c| c == name)?;
        Some(&self.rows[(conn % self.rows.len() as u64) as usize][column])
    }

    /// How many rows (after the heading) the file has.
    pub fn rows(&self) -> u64 {
        self.rows.len() as u64
    }

    /// Checks that every `{data.NAME}` in `text` (the value of `setting`) names a column.
    pub fn check(&self, setting: &'static str, text: &str) -> Result<(), ConfigError> {
        for name in placeholders(text) {
            if !self.columns.iter().any(|c| c == name) {
                return Err(invalid(
                    setting,
                    format!(
                        "`{{data.{name}}}`: {} has no column `{name}` (its columns: {})",
                        self.path.display(),
                        self.columns.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Every row's value of each column `template` names, for a character `refuses` (one that
    /// would change the framing of `place`, e.g. `the X-User header`): the first found is a
    /// usage error naming the file, the row (and its line when they differ), the column, the
    /// character and the place. Run once before the load, so the hot path fills unchecked.
    pub fn check_framing(
        &self,
        template: &str,
        place: &str,
        refuses: impl Fn(char) -> bool,
    ) -> Result<(), ConfigError> {
        for name in placeholders(template) {
            let Some(column) = self.columns.iter().position(|c| c == name) else { continue };
            for (n, row) in self.rows.iter().enumerate() {
                let Some(bad) = row[column].chars().find(|&c| refuses(c)) else { continue };
                let effect = match bad {
                    '\r' | '\n' => format!("which would end {place}"),
                    _ => format!("which {place} cannot carry"),
                };
                return Err(invalid(
                    "data",
                    format!(
                        "{}: {}, column {name} holds {}, {effect}: give values without CR, LF, NUL or \
                         other control characters there",
                        self.path.display(),
                        self.row_name(n),
                        character_name(bad)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Row `n` (0-based, after the heading) as a user finds it: `row 3`, the heading being row
    /// 1, with its line when a value spanning lines before it moved it (`row 3 (line 4)`).
    pub fn row_name(&self, n: usize) -> String {
        match self.lines.get(n) {
            Some(&line) if line != n + 2 => format!("row {} (line {line})", n + 2),
            _ => format!("row {}", n + 2),
        }
    }

    /// The URL's path and query (percent-encoded, so a placeholder reads `%7Bdata.NAME%7D`)
    /// with connection `conn`'s values, percent-encoded where a request line needs it.
    pub fn fill_path<'a>(&self, path: &'a str, conn: u64) -> Cow<'a, str> {
        match path.contains("%7Bdata.") {
            true => Cow::Owned(self.fill_as(&decode_placeholders(path), conn, true).into_owned()),
            false => Cow::Borrowed(path),
        }
    }

    /// `text` with each `{data.NAME}` replaced by connection `conn`'s row's `NAME`.
    pub fn fill<'a>(&self, text: &'a str, conn: u64) -> Cow<'a, str> {
        self.fill_as(text, conn, false)
    }

    /// [`DataTable::fill`], each value percent-encoded when `encode` (all but RFC 3986's
    /// unreserved characters).
    fn fill_as<'a>(&self, text: &'a str, conn: u64, encode: bool) -> Cow<'a, str> {
        if !text.contains(OPEN) {
            return Cow::Borrowed(text);
        }
        let row = &self.rows[(conn % self.rows.len() as u64) as usize];
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(OPEN) {
            out.push_str(&rest[..at]);
            let after = &rest[at + OPEN.len()..];
            let Some(end) = after.find('}') else { break };
            match self.columns.iter().position(|c| c == &after[..end]) {
                Some(column) if encode => {
                    for byte in row[column].bytes() {
                        match byte {
                            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                                out.push(byte as char)
                            }
                            other => out.push_str(&format!("%{other:02X}")),
                        }
                    }
                }
                Some(column) => out.push_str(&row[column]),
                None => out.push_str(&rest[at..at + OPEN.len() + end + 1]),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Cow::Owned(out)
    }
}

impl crate::protocol::DataRows for DataTable {
    fn fill_row<'t>(&self, template: &'t str, conn: u64) -> Cow<'t, str> {
        self.fill(template, conn)
    }
}

/// A character in words, for an error: `a line feed (LF)`, `the control character U+001B`.
fn character_name(c: char) -> String {
    match c {
        '\r' => "a carriage return (CR)".to_owned(),
        '\n' => "a line feed (LF)".to_owned(),
        '\0' => "a NUL".to_owned(),
        '\t' => "a tab".to_owned(),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        c => format!("the character {c:?} (U+{:04X})", c as u32),
    }
}

/// Fills `{data.NAME}` from `data` (when there is one) in `text`.
pub fn fill_data<'a>(data: Option<&DataTable>, text: &'a str, conn: u64) -> Cow<'a, str> {
    data.map_or(Cow::Borrowed(text), |data| data.fill(text, conn))
}

/// `%7Bdata.NAME%7D` (a placeholder in a percent-encoded URL) as `{data.NAME}`.
pub fn decode_placeholders(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(at) = rest.find("%7Bdata.") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "%7Bdata.".len()..];
        match after.find("%7D") {
            Some(end) => {
                out.push_str(&format!("{OPEN}{}}}", &after[..end]));
                rest = &after[end + 3..];
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The names of the `{data.NAME}` placeholders in `text`.
pub fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices(OPEN).filter_map(move |(at, _)| {
        let after = &text[at + OPEN.len()..];
        after.find('}').map(|end| &after[..end])
    })
}

/// RFC 4180 records, each with the line it starts on: fields split at commas, a quoted
/// field may hold commas, line breaks and doubled quotes; records end at LF or CRLF; blank
/// lines are skipped.
fn parse_csv(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let (mut record, mut field) = (Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let (mut line, mut start, mut quoted, mut was_quoted) = (1, 1, false, false);
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => {
                line += usize::from(c == '\n');
                field.push(c);
            }
            (false, '"') if field.is_empty() && !was_quoted => (quoted, was_quoted) = (true, true),
            (false, '"') => {
                return Err(format!("line {line}: a quote inside an unquoted field: quote the field"));
            }
            (false, ',') => {
                record.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                line += 1;
                if !(record.is_empty() && field.is_empty() && !was_quoted) {
                    record.push(std::mem::take(&mut field));
                    records.push((start, std::mem::take(&mut record)));
                }
                (start, was_quoted) = (line, false);
            }
            (false, c) if was_quoted => {
                return Err(format!("line {line}: `{c}` after a closing quote: end the field there"));
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err(format!("line {line}: a quoted field is never closed"));
    }
    if !(record.is_empty() && field.is_empty() && !was_quoted) {
        record.push(field);
        records.push((start, record));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<DataTable, String> {
        let dir = std::env::temp_dir().join(format!("wsbench-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path =
            dir.join(format!("{:x}.csv", text.len() * 31 + text.bytes().map(usize::from).sum::<usize>()));
        std::fs::write(&path, text).unwrap();
        let loaded = DataTable::load(&path).map_err(|e| e.to_string());
        std::fs::remove_file(path).unwrap();
        loaded
    }

    #[test]
    fn csv_quoting_is_read_as_rfc_4180_says() {
        let records = parse_csv("a,b,c\r\n\"x, y\",\"say \"\"hi\"\"\",\"two\nlines\"\n\n1,,3").unwrap();
        assert_eq!(
            records,
            [
                (1, vec!["a".to_owned(), "b".into(), "c".into()]),
                (2, vec!["x, y".into(), "say \"hi\"".into(), "two\nlines".into()]),
                (5, vec!["1".into(), "".into(), "3".into()])
            ],
            "each record with the line it starts on"
        );
        assert_eq!(
            parse_csv("\"\"\n").unwrap(),
            [(1, vec![String::new()])],
            "a quoted empty field is a record"
        );
        assert!(parse_csv("a,\"b\nc").unwrap_err().contains("never closed"));
        assert!(parse_csv("a,b\"c\n").unwrap_err().contains("line 1: a quote inside an unquoted field"));
        assert!(parse_csv("a,b\n\"c\"d\n").unwrap_err().contains("line 2: `d` after a closing quote"));
    }

    #[test]
    fn row_i_mod_rows_fills_connection_is_placeholders() {
        let data = table("user,token\nalice,t-a\nbob,\"t,b\"\ncarol,t-c\n").unwrap();
        let template = "Bearer {data.token} for {data.user} ({data.user})";
        assert_eq!(data.fill(template, 0), "Bearer t-a for alice (alice)");
        assert_eq!(data.fill(template, 1), "Bearer t,b for bob (bob)");
        assert_eq!(data.fill(template, 5), "Bearer t-c for carol (carol)");
        assert!(matches!(data.fill("no placeholder {conn}", 3), Cow::Borrowed(_)));
        assert_eq!(fill_data(None, "{data.user}", 0), "{data.user}");
        assert_eq!(
            data.fill_path("/a?u=%7Bdata.user%7D&t=%7Bdata.token%7D&x=%7D", 1),
            "/a?u=bob&t=t%2Cb&x=%7D"
        );
        assert_eq!(decode_placeholders("/%7Bdata.user%7D/%7Bdata.x"), "/{data.user}/%7Bdata.x");
        assert!(data.check("header", template).is_ok());
        let error = data.check("header", "X: {data.name}").unwrap_err().to_string();
        assert!(
            error.contains("--header: `{data.name}`: ")
                && error.ends_with("has no column `name` (its columns: user, token)"),
            "{error}"
        );
    }

    #[test]
    fn a_value_that_would_change_a_places_framing_is_refused_naming_its_row_and_column() {
        let header = |c: char| (c.is_control() && c != '\t') || c == '\u{7f}';
        let data =
            table("user,token\r\nalice,t1\r\n\"al\r\nX-Injected: yes\",t2\r\nbob,\"t\u{0}3\"\r\n").unwrap();
        let error = data.check_framing("u-{data.user}", "the X-User header", header).unwrap_err().to_string();
        assert!(
            error.starts_with("--data: ")
                && error.ends_with(
                    ".csv: row 3, column user holds a carriage return (CR), which would end the \
                     X-User header: give values without CR, LF, NUL or other control characters there"
                ),
            "{error}"
        );
        let error =
            data.check_framing("Bearer {data.token}", "the Authorization header", header).unwrap_err();
        assert!(
            error.to_string().contains(
                "row 4 (line 5), column token holds a NUL, which the Authorization header cannot carry"
            ),
            "the row after a value spanning two lines starts a line later: {error}"
        );
        let tabs = table("user\n\"a\tb\"\n").unwrap();
        assert!(
            tabs.check_framing("{data.user}", "the X-User header", header).is_ok(),
            "a header may hold a tab"
        );
        assert!(data.check_framing("no placeholder", "the X-User header", header).is_ok());
        assert!(
            data.check_framing("{data.user}", "a STOMP destination", |c| c == '\0').is_ok(),
            "each place refuses what it cannot carry"
        );
        // The URL's path and query carry a value percent-encoded: it cannot end the request line.
        assert_eq!(data.fill_path("/feed?u=%7Bdata.user%7D", 1), "/feed?u=al%0D%0AX-Injected%3A%20yes");
    }

    #[test]
    fn bad_files_are_refused_naming_the_problem() {
        let cases = [
            ("", "is empty"),
            ("user\n", "has no row after its heading"),
            ("user,user\na,b\n", "column 2 is named `user`"),
            ("user,\na,b\n", "column 2 is named ``"),
            ("user,token\na\n", "row 2 has 1 fields, the heading 2"),
            ("user\n\"a\n", "never closed"),
        ];
        for (text, expected) in cases {
            let error = table(text).unwrap_err();
            assert!(error.starts_with("--data: ") && error.contains(expected), "{text:?}: {error}");
        }
        let error = DataTable::load(Path::new("/nonexistent/users.csv")).unwrap_err().to_string();
        assert!(error.starts_with("--data: /nonexistent/users.csv: "), "{error}");
    }
}
