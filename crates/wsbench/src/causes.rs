//! An error as one line with each of its causes, once each (`a: b: c`). Error messages
//! never repeat their source (the rule of every error type here); wherever an error
//! becomes text (the binary's last line, a comparison's problems, a shard's message) this
//! puts the causes back. It depends on nothing, so every module may use it.

/// The error and each of its causes, once each: `a: b: c`.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot write r.json")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn each_cause_follows_once() {
        let error = Outer(std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory"));
        assert_eq!(error.to_string(), "cannot write r.json");
        assert_eq!(with_causes(&error), "cannot write r.json: No such file or directory");
    }
}
