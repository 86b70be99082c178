//! What the upgrade request carries beyond the bare WebSocket headers, so that endpoints
//! behind auth, cookies, an Origin check or a required subprotocol can be benchmarked:
//! `--header` (repeatable), `--header-file`, `--origin`, `--bearer`, `--cookie` and
//! `--subprotocol`, checked into one [`HandshakeOptions`]. A header value may hold `{conn}`,
//! replaced by the connection's number, so that each connection carries its own token.
//!
//! Nothing here may let a value break the request: names are HTTP tokens, values have no
//! control characters (no CR/LF injection), whether given or filled from a `--data` row
//! (every row is checked before the run), and the headers wsbench writes itself (`Host`,
//! `Upgrade`, `Sec-WebSocket-Key`, …) cannot be given. The result file records what was sent
//! with secrets replaced by `<redacted>` ([`HandshakeOptions`]'s `Serialize`).

use std::path::Path;

use serde::Serialize;

use super::error::{ConfigError, invalid};
use super::target::REDACTED;
use crate::input_file::{InputFileError, InputKind};

/// Replaced in a header value by the connection's number (0-based, across the run).
pub const CONN_PLACEHOLDER: &str = "{conn}";

/// Headers the request builder writes itself; giving them would send them twice or break
/// the upgrade.
const OWNED_HEADERS: &[&str] = &[
    "host",
    "upgrade",
    "connection",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "content-length",
    "transfer-encoding",
];

/// One extra header of the upgrade request; `value` may hold [`CONN_PLACEHOLDER`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// The upgrade request's extra headers and offered subprotocols (empty: a bare upgrade).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandshakeOptions {
    /// In the order they are sent: the URL's `user:password` (as `Authorization: Basic`),
    /// `--origin`, `--bearer`, `--cookie`, the `--header-file`'s, then `--header`s.
    pub headers: Vec<Header>,
    /// `--subprotocol`, in order of preference; the server must choose one of them.
    pub subprotocols: Vec<String>,
    /// `--data`: each connection's row, for `{data.NAME}` in header values and the URL.
    pub data: Option<std::sync::Arc<super::DataTable>>,
}

impl HandshakeOptions {
    /// Nothing beyond a bare upgrade.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.subprotocols.is_empty() && self.data.is_none()
    }

    /// The headers of connection `conn`, with `{conn}` replaced by its number and
    /// `{data.NAME}` by its row's value.
    pub fn headers_for(&self, conn: u64) -> Vec<(String, String)> {
        self.headers
            .iter()
            .map(|h| {
                let value = super::fill_data(self.data.as_deref(), &h.value, conn);
                (h.name.clone(), value.replace(CONN_PLACEHOLDER, &conn.to_string()))
            })
            .collect()
    }

    /// The URL's path and query for connection `conn`, `{data.NAME}` filled in.
    pub fn path_for<'a>(&self, path: &'a str, conn: u64) -> std::borrow::Cow<'a, str> {
        match &self.data {
            Some(data) => data.fill_path(path, conn),
            None => std::borrow::Cow::Borrowed(path),
        }
    }
}

impl Serialize for HandshakeOptions {
    /// `{"headers": ["Name: value", …], "subprotocols": [...]}`, secrets redacted.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|h| format!("{}: {}", h.name, if is_secret(&h.name) { REDACTED } else { &h.value }))
            .collect();
        let mut out = serializer.serialize_struct("HandshakeOptions", 3)?;
        out.serialize_field("headers", &headers)?;
        out.serialize_field("subprotocols", &self.subprotocols)?;
        if let Some(data) = &self.data {
            out.serialize_field("data", &data.path)?;
        }
        out.end()
    }
}

/// Whether a header's value is a secret the result file must not show: credentials and
/// cookies, and any name that says token, secret, key, password or auth (the
/// `Sec-WebSocket-*` headers are protocol, not secrets).
pub fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if name.starts_with("sec-websocket-") {
        return false;
    }
    name == "cookie" || ["auth", "token", "secret", "key", "password"].iter().any(|word| name.contains(word))
}

/// The settings that make up the handshake, as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct HandshakeSettings<'a> {
    pub headers: &'a [String],
    pub header_file: Option<&'a Path>,
    pub subprotocol: Option<&'a str>,
    pub origin: Option<&'a str>,
    pub bearer: Option<&'a str>,
    pub cookie: Option<&'a str>,
    /// The target, whose URL's `user:password` is sent as `Authorization: Basic`.
    pub target: Option<&'a super::Target>,
    /// `--data`: the CSV file whose columns `{data.NAME}` names.
    pub data: Option<&'a Path>,
}

impl HandshakeSettings<'_> {
    /// Checks every header and subprotocol; reads the header file.
    pub fn validate(&self) -> Result<HandshakeOptions, ConfigError> {
        let mut headers = Vec::new();
        let given = [("origin", "Origin", self.origin), ("cookie", "Cookie", self.cookie)];
        for (setting, name, value) in given {
            if let Some(value) = value {
                if value.trim().is_empty() {
                    return Err(invalid(setting, "is empty: give a value, or leave the flag out"));
                }
                headers.push(header_of(setting, name, value)?);
            }
        }
        if let Some(token) = self.bearer {
            check_value("bearer", token)?;
            if token.trim().is_empty() {
                return Err(invalid("bearer", "is empty: give the token, or leave the flag out"));
            }
            if token.contains(' ') {
                return Err(invalid("bearer", "give the token alone, without `Bearer ` or spaces"));
            }
            headers.push(Header { name: "Authorization".into(), value: format!("Bearer {token}") });
        }
        if let Some(path) = self.header_file {
            headers.extend(read_header_file(path)?);
        }
        for line in self.headers {
            headers.push(parse_header("header", line)?);
        }
        check_flag_conflicts(self, &headers)?;
        if let Some((target, basic)) = self.target.and_then(|t| Some((t, t.basic_authorization()?))) {
            if headers.iter().any(|h| h.name.eq_ignore_ascii_case("Authorization")) {
                return Err(ConfigError::Url {
                    url: target.url.clone(),
                    problem: "its user:password is sent as Authorization, which --bearer, --header or \
                              --header-file sets too: give the credentials once"
                        .into(),
                });
            }
            headers.insert(0, Header { name: "Authorization".into(), value: basic });
        }
        let subprotocols = self.subprotocol.map(parse_subprotocols).transpose()?.unwrap_or_default();
        let data = self.data.map(super::DataTable::load).transpose()?;
        check_data(data.as_ref(), &headers, self.target)?;
        Ok(HandshakeOptions { headers, subprotocols, data: data.map(std::sync::Arc::new) })
    }
}

/// Every `{data.NAME}` in the header values and the URL names a column of the data file;
/// without one, none may be used. A header value is checked against every row's value of
/// the columns it names, as `--header` is: no row may end the header or add one (the URL's
/// values are percent-encoded when filled, so no row can end its request line).
fn check_data(
    data: Option<&super::DataTable>,
    headers: &[Header],
    target: Option<&super::Target>,
) -> Result<(), ConfigError> {
    let path = target.map(|t| super::data::decode_placeholders(&t.path));
    let texts = headers.iter().map(|h| ("header", h.value.as_str()));
    for (setting, text) in texts.chain(path.as_deref().map(|p| ("target", p))) {
        match data {
            Some(data) => data.check(setting, text)?,
            None if super::data::placeholders(text).next().is_some() => {
                return Err(invalid(setting, "`{data.NAME}` needs --data FILE.csv, whose columns it names"));
            }
            None => {}
        }
    }
    if let Some(data) = data {
        for header in headers {
            data.check_framing(&header.value, &format!("the {} header", header.name), is_forbidden_in_value)?;
        }
    }
    Ok(())
}

/// `--origin`/`--cookie`/`--bearer` and a `--header` of the same name: one would be sent twice.
fn check_flag_conflicts(settings: &HandshakeSettings, headers: &[Header]) -> Result<(), ConfigError> {
    let dedicated = [
        ("origin", "Origin", settings.origin),
        ("cookie", "Cookie", settings.cookie),
        ("bearer", "Authorization", settings.bearer),
    ];
    for (setting, name, value) in dedicated {
        let count = headers.iter().filter(|h| h.name.eq_ignore_ascii_case(name)).count();
        if value.is_some() && count > 1 {
            return Err(invalid(
                setting,
                format!("a --header or --header-file line also sets {name}: give it once"),
            ));
        }
    }
    Ok(())
}

/// A header named by a dedicated flag (`--origin`, `--cookie`).
fn header_of(setting: &'static str, name: &str, value: &str) -> Result<Header, ConfigError> {
    check_value(setting, value)?;
    Ok(Header { name: name.to_owned(), value: value.trim().to_owned() })
}

/// `Name: value`, checked.
fn parse_header(setting: &'static str, line: &str) -> Result<Header, ConfigError> {
    header_line(line).map_err(|problem| invalid(setting, problem))
}

/// `Name: value` → a checked [`Header`], or what is wrong with it.
fn header_line(line: &str) -> Result<Header, String> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(format!("`{}` is not `Name: value`", shorten(line)));
    };
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return Err(format!(
            "`{}` is not a header name: use letters, digits and !#$%&'*+-.^_`|~ only",
            shorten(name)
        ));
    }
    if OWNED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "{name} is written by wsbench itself and cannot be given (for subprotocols use --subprotocol, for permessage-deflate --compression)"
        ));
    }
    value_problem(value).map_or(Ok(()), Err)?;
    Ok(Header { name: name.to_owned(), value: value.trim().to_owned() })
}

fn check_value(setting: &'static str, value: &str) -> Result<(), ConfigError> {
    value_problem(value).map_or(Ok(()), |problem| Err(invalid(setting, problem)))
}

/// Why a header value cannot be sent: a control character (CR and LF would end the header
/// and let the value inject more).
fn value_problem(value: &str) -> Option<String> {
    let bad = value.chars().find(|&c| is_forbidden_in_value(c))?;
    Some(format!(
        "the value holds the control character {:?}: header values cannot hold CR, LF or other control characters",
        bad
    ))
}

/// A character a header value cannot hold: a control character but the tab (RFC 9110's
/// `field-vchar` and whitespace; CR, LF and NUL among them).
fn is_forbidden_in_value(c: char) -> bool {
    c.is_control() && c != '\t'
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn shorten(text: &str) -> String {
    let short: String = text.chars().take(40).collect();
    if short.len() < text.len() { format!("{short}…") } else { short }
}

/// `chat, superchat` → each a token, none twice.
fn parse_subprotocols(list: &str) -> Result<Vec<String>, ConfigError> {
    let mut protocols: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim) {
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(invalid(
                "subprotocol",
                format!(
                    "`{}` is not a subprotocol name: give tokens separated by commas, e.g. chat,v2.chat",
                    shorten(name)
                ),
            ));
        }
        if protocols.iter().any(|p| p == name) {
            return Err(invalid("subprotocol", format!("`{name}` is given twice")));
        }
        protocols.push(name.to_owned());
    }
    Ok(protocols)
}

/// The `--header-file`: one `Name: value` per line; blank lines and `#` comments skipped.
fn read_header_file(path: &Path) -> Result<Vec<Header>, ConfigError> {
    let text = crate::input_file::read_text(path, InputKind::HeaderFile).map_err(|e| match e {
        InputFileError::Read { source, .. } => {
            invalid("header-file", format!("cannot read {}: {source}", path.display()))
        }
        too_big => invalid("header-file", too_big.to_string()),
    })?;
    parse_header_file(&text, path)
}

/// The lines of a header file, each checked; an error names `FILE:LINE`.
pub fn parse_header_file(text: &str, path: &Path) -> Result<Vec<Header>, ConfigError> {
    let mut headers = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let header = header_line(line).map_err(|problem| {
            invalid("header-file", format!("{}:{}: {problem}", path.display(), number + 1))
        })?;
        headers.push(header);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate(settings: HandshakeSettings) -> Result<HandshakeOptions, String> {
        settings.validate().map_err(|e| e.to_string())
    }

    #[test]
    fn dedicated_flags_and_headers_become_headers_in_order() {
        let headers = ["X-Id: user-{conn}".to_owned()];
        let options = validate(HandshakeSettings {
            headers: &headers,
            subprotocol: Some("chat, v2"),
            origin: Some("https://example.com"),
            bearer: Some("t0k"),
            cookie: Some("session=abc"),
            ..HandshakeSettings::default()
        })
        .unwrap();
        let names: Vec<&str> = options.headers.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["Origin", "Cookie", "Authorization", "X-Id"]);
        assert_eq!(options.subprotocols, ["chat", "v2"]);
        assert_eq!(options.headers_for(7)[3], ("X-Id".to_owned(), "user-7".to_owned()));
        assert_eq!(options.headers_for(7)[2].1, "Bearer t0k");
    }

    #[test]
    fn url_credentials_are_sent_as_basic_auth_unless_authorization_is_given_too() {
        let target = super::super::Target::parse("ws://u:pw@127.0.0.1:1/").unwrap();
        let options =
            validate(HandshakeSettings { target: Some(&target), ..HandshakeSettings::default() }).unwrap();
        assert_eq!(options.headers_for(0), [("Authorization".to_owned(), "Basic dTpwdw==".to_owned())]);
        let json = serde_json::to_value(&options).unwrap();
        assert_eq!(json["headers"][0], "Authorization: <redacted>");
        let both = validate(HandshakeSettings {
            target: Some(&target),
            bearer: Some("t0k"),
            ..HandshakeSettings::default()
        })
        .unwrap_err();
        assert_eq!(
            both,
            "`ws://u:<redacted>@127.0.0.1:1/`: its user:password is sent as Authorization, which --bearer, \
             --header or --header-file sets too: give the credentials once"
        );
    }

    #[test]
    fn the_result_shows_secrets_redacted() {
        let headers =
            ["X-Api-Key: k".to_owned(), "X-Session-Token: t".to_owned(), "X-Trace: visible".to_owned()];
        let options = validate(HandshakeSettings {
            headers: &headers,
            bearer: Some("t0k"),
            cookie: Some("a=b"),
            subprotocol: Some("chat"),
            ..HandshakeSettings::default()
        })
        .unwrap();
        let json = serde_json::to_value(&options).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "headers": ["Cookie: <redacted>", "Authorization: <redacted>", "X-Api-Key: <redacted>",
                            "X-Session-Token: <redacted>", "X-Trace: visible"],
                "subprotocols": ["chat"],
            })
        );
        assert!(!is_secret("Sec-WebSocket-Foo") && is_secret("X-Secret") && is_secret("Proxy-Authorization"));
    }

    #[test]
    fn bad_headers_are_usage_errors_naming_the_problem() {
        let one = |line: &str| {
            let headers = [line.to_owned()];
            validate(HandshakeSettings { headers: &headers, ..HandshakeSettings::default() }).unwrap_err()
        };
        assert!(one("no colon").contains("is not `Name: value`"), "{}", one("no colon"));
        assert!(one("Bad Name: x").contains("is not a header name"));
        assert!(one("X-A: a\r\nInjected: yes").contains("control character"));
        assert!(one("Sec-WebSocket-Key: x").contains("written by wsbench itself"));
        assert!(one("host: x").contains("written by wsbench itself"));
        let origin = validate(HandshakeSettings { origin: Some("a\nb"), ..HandshakeSettings::default() });
        assert!(origin.unwrap_err().starts_with("--origin: "));
        let twice = ["Authorization: Basic x".to_owned()];
        let both = validate(HandshakeSettings {
            headers: &twice,
            bearer: Some("t"),
            ..HandshakeSettings::default()
        });
        assert!(both.unwrap_err().starts_with("--bearer: "));
        let bearer = validate(HandshakeSettings { bearer: Some("Bearer t"), ..HandshakeSettings::default() });
        assert!(bearer.unwrap_err().contains("without `Bearer `"));
    }

    #[test]
    fn a_data_row_that_would_end_a_header_is_refused_before_load() {
        let dir = std::env::temp_dir().join(format!("wsbench-handshake-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("users.csv");
        std::fs::write(&csv, "user,token\nalice,t1\n\"al\nX-Injected: yes\",t2\n").unwrap();
        let headers = ["X-User: {data.user}".to_owned()];
        let refused = validate(HandshakeSettings {
            headers: &headers,
            data: Some(&csv),
            ..HandshakeSettings::default()
        })
        .unwrap_err();
        assert_eq!(
            refused,
            format!(
                "--data: {}: row 3, column user holds a line feed (LF), which would end the X-User header: \
                 give values without CR, LF, NUL or other control characters there",
                csv.display()
            )
        );
        let target = super::super::Target::parse("ws://127.0.0.1:1/feed?u={data.user}").unwrap();
        let options = validate(HandshakeSettings {
            target: Some(&target),
            data: Some(&csv),
            ..HandshakeSettings::default()
        })
        .unwrap();
        assert_eq!(
            options.path_for(&target.path, 1),
            "/feed?u=al%0AX-Injected%3A%20yes",
            "the URL carries the value percent-encoded"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_subprotocols_are_rejected() {
        let of =
            |list| validate(HandshakeSettings { subprotocol: Some(list), ..HandshakeSettings::default() });
        assert!(of("chat,").unwrap_err().contains("is not a subprotocol name"));
        assert!(of("a b").unwrap_err().contains("is not a subprotocol name"));
        assert!(of("chat,chat").unwrap_err().contains("given twice"));
    }

    #[test]
    fn the_scenario_file_takes_the_same_keys() {
        let text = "target = \"ws://127.0.0.1:9/feed?room=1\"\nheader = [\"X-User: u-{conn}\"]\n\
                    subprotocol = \"chat\"\nbearer = \"t0k\"\norigin = \"https://a.example\"\n";
        let settings = crate::config::RunSettings::parse_toml(text, Path::new("s.toml")).unwrap();
        let config = settings.validate().unwrap();
        let options = &config.load.handshake;
        assert_eq!(options.subprotocols, ["chat"]);
        let sent: Vec<(String, String)> = options.headers_for(3);
        assert_eq!(sent[0], ("Origin".to_owned(), "https://a.example".to_owned()));
        assert_eq!(sent[2], ("X-User".to_owned(), "u-3".to_owned()));
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(json["handshake"]["headers"][1], "Authorization: <redacted>");
        assert!(
            serde_json::to_value(crate::config::RunSettings::default().validate().unwrap())
                .unwrap()
                .get("handshake")
                .is_none(),
            "a bare upgrade records no handshake"
        );
    }

    #[test]
    fn header_files_skip_blanks_and_comments_and_name_the_bad_line() {
        let path = Path::new("h.txt");
        let headers = parse_header_file("# auth\n\nX-A: 1\n  X-B:two words \n", path).unwrap();
        assert_eq!(
            headers,
            [
                Header { name: "X-A".into(), value: "1".into() },
                Header { name: "X-B".into(), value: "two words".into() }
            ]
        );
        let error = parse_header_file("X-A: 1\n# c\nnot a header\n", path).unwrap_err().to_string();
        assert_eq!(error, "--header-file: h.txt:3: `not a header` is not `Name: value`");
        let missing = validate(HandshakeSettings {
            header_file: Some(Path::new("/nonexistent/h.txt")),
            ..HandshakeSettings::default()
        });
        assert!(missing.unwrap_err().starts_with("--header-file: cannot read /nonexistent/h.txt: "));
    }
}
