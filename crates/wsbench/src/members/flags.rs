//! The member options as flags of `wsbench run` (clap): each one's help says whose it is, what
//! each member that declares it means by it, its bound and its default once; a secret gets
//! its `--NAME-env VAR` flag too; and the values given are read back into [`OptionValues`].

use clap::{Arg, ArgAction, ArgMatches, Command};

use super::{Owner, declared, flags};
use crate::options::{Kind, OptionSpec, OptionValues};

/// The flag of a member option: its help says whose it is, its default and its bound.
fn arg_of(spec: &'static OptionSpec) -> Arg {
    let arg = Arg::new(spec.key).long(spec.flag).help(help_of(spec.key));
    match spec.kind {
        Kind::Count => arg.value_name(spec.value_name).value_parser(clap::value_parser!(u64)),
        Kind::Text | Kind::Table(_) => arg.value_name(spec.value_name).allow_hyphen_values(true),
        Kind::Secret { env } => arg.value_name(spec.value_name).allow_hyphen_values(true).conflicts_with(env),
        Kind::Switch => arg.action(ArgAction::SetTrue),
    }
}

/// The help of the option of TOML key `key`: what each member declaring it says of it, its
/// bound and (once, at the end) its default; members that say the same share one sentence.
/// Members may give one flag different meanings (`--channel`: a channel name in one
/// protocol, a channel class in another), each in its own words.
fn help_of(key: &str) -> String {
    let mut said: Vec<(Vec<&str>, &OptionSpec)> = Vec::new();
    for (spec, owner) in declared().into_iter().filter(|(spec, _)| spec.key == key) {
        let alike = |other: &OptionSpec| {
            (other.help, other.bound, other.default) == (spec.help, spec.bound, spec.default)
        };
        match said.iter_mut().find(|(_, other)| alike(other)) {
            Some((names, _)) => names.push(owner.name()),
            None => said.push((vec![owner.name()], spec)),
        }
    }
    let sentences: Vec<String> = said
        .iter()
        .map(|(names, spec)| match spec.bound {
            "" => format!("{}: {}", names.join(", "), spec.help),
            bound => format!("{}: {} ({bound})", names.join(", "), spec.help),
        })
        .collect();
    let defaults: Vec<String> = match said.as_slice() {
        [(_, spec)] => [spec.default].into_iter().filter(|d| !d.is_empty()).map(str::to_owned).collect(),
        _ => said
            .iter()
            .filter(|(_, spec)| !spec.default.is_empty())
            .map(|(names, spec)| format!("{}: {}", names.join(", "), spec.default))
            .collect(),
    };
    let mut help = sentences.join("; ");
    if !defaults.is_empty() {
        help.push_str(&format!(" [default: {}]", defaults.join("; ")));
    }
    help
}

/// The `--NAME-env VAR` flag of secret `spec`.
fn env_arg_of(spec: &'static OptionSpec, env: &'static str, owners: &[Owner]) -> Arg {
    let whose: Vec<&str> = owners.iter().map(Owner::name).collect();
    let help = format!(
        "{}: the environment variable to read --{} from when the run starts, kept out of shell history \
         [default: none]",
        whose.join(", "),
        spec.flag
    );
    Arg::new(env).long(env).value_name("VAR").help(help)
}

impl clap::Args for OptionValues {
    fn augment_args(mut command: Command) -> Command {
        for (_, (spec, owners)) in flags() {
            command = command.arg(arg_of(spec));
            if let Some(env) = spec.kind.env_flag() {
                command = command.arg(env_arg_of(spec, env, &owners));
            }
        }
        command
    }
    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for OptionValues {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut values = OptionValues::default();
        values.update_from_arg_matches(matches)?;
        Ok(values)
    }
    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for (key, (spec, _)) in flags() {
            let value = match spec.kind {
                Kind::Count => matches.get_one::<u64>(key).map(|n| toml::Value::Integer(*n as i64)),
                Kind::Text | Kind::Table(_) | Kind::Secret { .. } => {
                    matches.get_one::<String>(key).map(|text| toml::Value::String(text.clone()))
                }
                Kind::Switch => matches.get_flag(key).then_some(toml::Value::Boolean(true)),
            };
            if let Some(env) = spec.kind.env_flag()
                && let Some(variable) = matches.get_one::<String>(env)
            {
                self.0.insert(env.to_owned(), toml::Value::String(variable.clone()));
            }
            if let Some(value) = value {
                self.0.insert(key.to_owned(), value);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_shows_each_member_option_with_its_owner_default_and_bound() {
        let command = <OptionValues as clap::Args>::augment_args(Command::new("run"));
        for (_, (spec, owners)) in flags() {
            let arg = command.get_arguments().find(|arg| arg.get_long() == Some(spec.flag)).unwrap();
            let help = arg.get_help().unwrap().to_string();
            assert!(help.starts_with(owners[0].name()), "{help}");
            assert!(help.contains(spec.default) && help.contains(spec.bound), "{help}");
        }
    }

    #[test]
    fn an_option_members_declare_with_their_own_meanings_says_each_once_and_every_default() {
        let shared: Vec<&str> =
            flags().filter(|(_, (_, owners))| owners.len() > 1).map(|(key, _)| key).collect();
        assert!(!shared.is_empty(), "some option is declared by two members");
        for key in shared {
            let help = help_of(key);
            let (start, end) = (help.find("[default: ").unwrap(), help.len() - 1);
            assert_eq!(help.matches("[default: ").count(), 1, "{help}");
            assert!(help.ends_with(']'), "{help}");
            for (spec, owner) in declared().into_iter().filter(|(spec, _)| spec.key == key) {
                assert!(help[..start].contains(spec.help), "{}'s help is said: {help}", owner.name());
                assert!(
                    help[start..end].contains(spec.default),
                    "{}'s default is said: {help}",
                    owner.name()
                );
            }
        }
    }
}
