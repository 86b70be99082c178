//! `--transport` read as a list, for `wsbench compare`, which measures every server over
//! each transport named (a row per transport beside the default one's), and a comparison
//! row's settings narrowed to the one transport it runs over. A list names each member of
//! the transport registry at most once, so it is bounded by the registry; an unknown name, an
//! empty one or one given twice is a one-line usage error before any server starts. `wsbench
//! run` keeps reading one transport (`RunSettings::transport_chosen`).

use crate::config::{ConfigError, RunSettings, invalid_setting};
use crate::engine::dial::{DIALS, Dial, by_flag_name};
use crate::options::Kind;
use crate::scenario;

impl RunSettings {
    /// `--transport` as a comma-separated list, in the order given, with the transport a
    /// switch chooses (`--http2`) when no list is given; empty: the registry's first alone.
    pub fn transports_listed(&self) -> Result<Vec<&'static dyn Dial>, ConfigError> {
        let switched = DIALS.iter().copied().find(|dial| {
            dial.options().iter().any(|option| option.kind == Kind::Switch && self.options.switch(option))
        });
        let Some(text) = self.transport.as_deref() else { return Ok(switched.into_iter().collect()) };
        let known: Vec<&str> = DIALS.iter().map(|dial| dial.flag_name()).collect();
        let mut listed: Vec<&'static dyn Dial> = Vec::new();
        for name in text.split(',').map(str::trim) {
            if name.is_empty() {
                let example = known[1..].join(",");
                let why = format!(
                    "`{text}` has an empty name: give transports separated by commas, e.g. {example}"
                );
                return Err(invalid_setting("transport", why));
            }
            let dial = by_flag_name(name).ok_or_else(|| {
                invalid_setting(
                    "transport",
                    format!("`{name}` is not a transport: use {}", scenario::or_list(&known)),
                )
            })?;
            if listed.iter().any(|seen| seen.name() == dial.name()) {
                let why =
                    format!("{} is named twice in `{text}`: name each transport once", dial.flag_name());
                return Err(invalid_setting("transport", why));
            }
            listed.push(dial);
        }
        match switched {
            Some(dial) if !listed.iter().any(|seen| seen.name() == dial.name()) => Err(invalid_setting(
                "transport",
                format!(
                    "`{text}` and the switch of --transport {} contradict each other: give one",
                    dial.flag_name()
                ),
            )),
            _ => Ok(listed),
        }
    }

    /// These settings for a run over `dial` alone: `--transport` its name, the options of
    /// the other transports left out (those `dial` declares too stay); over the registry's
    /// first, [`RunSettings::without_transport`].
    pub fn over_transport(&mut self, dial: &'static dyn Dial) {
        if dial.name() == DIALS[0].name() {
            return self.without_transport();
        }
        self.transport = Some(dial.flag_name().to_owned());
        let own: Vec<&str> = dial.options().iter().map(|option| option.key).collect();
        for other in DIALS.iter().filter(|other| other.name() != dial.name()) {
            for option in other.options().iter().filter(|option| !own.contains(&option.key)) {
                self.options.0.remove(option.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(text: &str) -> Result<Vec<&'static str>, String> {
        let settings = RunSettings { transport: Some(text.to_owned()), ..RunSettings::default() };
        settings
            .transports_listed()
            .map(|dials| dials.iter().map(|dial| dial.flag_name()).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_list_is_read_in_its_order_by_either_name() {
        let second = DIALS[1].flag_name();
        let last = DIALS[DIALS.len() - 1];
        let text = format!("{}, {second}", last.name());
        assert_eq!(listed(&text).unwrap(), [last.flag_name(), second]);
        assert_eq!(listed(second).unwrap(), [second]);
        assert!(RunSettings::default().transports_listed().unwrap().is_empty());
    }

    #[test]
    fn unknown_empty_and_repeated_names_are_refused_in_one_line() {
        let known: Vec<&str> = DIALS.iter().map(|dial| dial.flag_name()).collect();
        let unknown = listed(&format!("{},h9", known[1])).unwrap_err();
        assert_eq!(
            unknown,
            format!("--transport: `h9` is not a transport: use {}", scenario::or_list(&known))
        );
        let twice = listed(&format!("{0},{1},{0}", known[1], DIALS[1].name())).unwrap_err();
        assert!(twice.contains(&format!("{} is named twice", known[1])), "{twice}");
        let empty = listed(&format!("{},", known[1])).unwrap_err();
        assert!(empty.contains("has an empty name"), "{empty}");
        for refusal in [unknown, twice, empty] {
            assert_eq!(refusal.lines().count(), 1, "{refusal}");
        }
    }

    #[test]
    fn a_row_over_one_transport_keeps_only_the_options_that_transport_declares() {
        let mut settings = RunSettings { transport: Some("x,y".to_owned()), ..RunSettings::default() };
        for dial in DIALS {
            for option in dial.options() {
                settings.options.0.insert(option.key.to_owned(), toml::Value::Boolean(true));
            }
        }
        let last = DIALS[DIALS.len() - 1];
        settings.over_transport(last);
        assert_eq!(settings.transport.as_deref(), Some(last.flag_name()));
        let kept: Vec<&String> = settings.options.0.keys().collect();
        let own: Vec<&str> = last.options().iter().map(|option| option.key).collect();
        assert!(kept.iter().all(|key| own.contains(&key.as_str())), "{kept:?} beyond {own:?}");
        settings.over_transport(DIALS[0]);
        assert!(settings.transport.is_none() && settings.options.0.is_empty());
    }
}
