//! Unit tests of the flow compiler: steps onto ops, templates, checks and their errors.

use super::*;

fn compile(text: &str) -> Result<FlowProgram, String> {
    let settings: FlowSettings = toml::from_str(text).map_err(|e| e.to_string())?;
    FlowProgram::compile(&settings).map_err(|e| e.to_string())
}

#[test]
fn a_send_and_its_expect_compile_with_the_field_tracked() {
    let program = compile(
        "[[steps]]\nname = \"call\"\nsend = '{\"id\":{seq}}'\n[[steps]]\nexpect = \"call\"\nmatch-field = \"id\"\ntimeout = \"1s\"\n",
    )
    .unwrap();
    match &program.ops[..] {
        [Op::Send { name, template, track, .. }, Op::ExpectReply { send, timeout }] => {
            assert_eq!((name.as_str(), track.as_deref(), send.as_str()), ("call", Some("id"), "call"));
            assert_eq!(template, &[Piece::Text("{\"id\":".into()), Piece::Seq, Piece::Text("}".into())]);
            assert_eq!(*timeout, Duration::from_secs(1));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn replies_are_counted_and_checked_with_the_sends_values() {
    let program = compile(
        "[[steps]]\nname = \"sub\"\nsend = '{\"id\":\"s{seq}\"}'\n[[steps]]\nexpect = \"sub\"\n\
         match-field = \"id\"\nuntil = '\"type\":\"complete\"'\ncheck-json = { \"/id\" = \"s{seq}\" }\n\
         check-regex = '\"c\":{conn}'\n",
    )
    .unwrap();
    let (field, replies, checks) = program.send("sub").unwrap();
    assert_eq!(field, "id");
    assert!(matches!(replies, Replies::Until(_)));
    let vars = Vars { conn: 4, seq: 9, ..Vars::default() };
    assert!(checks.pass(r#"{"id":"s9","c":4}"#, &vars));
    assert!(!checks.pass(r#"{"id":"s8","c":4}"#, &vars), "another send's reply");
    assert!(!checks.pass(r#"{"id":"s9","c":5}"#, &vars), "another connection's");
    assert!(!checks.pass("not json \"c\":4", &vars));
    let pattern = Pattern::compile("seq {seq} of {conn}").unwrap();
    assert!(pattern.regex(&vars).is_match("seq 9 of 4"));
    assert_eq!(serde_json::to_value(&pattern).unwrap(), "seq {seq} of {conn}");
}

#[test]
fn repeat_blocks_point_at_their_ends() {
    let program =
        compile("[[steps]]\nrepeat = 3\nsteps = [ { sleep = \"1ms\" }, { send = \"x\" } ]\n").unwrap();
    assert!(matches!(program.ops[0], Op::Repeat { times: Some(3), end: 3 }));
    assert!(matches!(program.ops[3], Op::RepeatEnd { start: 0 }));
}

#[test]
fn bad_steps_are_named() {
    let cases = [
        ("[[steps]]\nname = \"a\"\nexpect = \"nope\"\nmatch-field = \"id\"\n", "step 1 `a`: expects `nope`"),
        ("[[steps]]\nsend = \"x\"\nsleep = \"1s\"\n", "step 1: give exactly one"),
        ("[[steps]]\nsend = \"x\"\n[[steps]]\nexpect-regex = \"(\"\n", "step 2: bad regex"),
        ("[[steps]]\nrepeat = 0\nsteps = [ { send = \"x\" } ]\n", "repeat is a count above 0"),
        ("[[steps]]\nsleep = \"soon\"\n", "step 1:"),
        ("steps = []\n", "no steps"),
        (
            "[[steps]]\nname = \"c\"\nsend = \"x\"\n[[steps]]\nexpect = \"c\"\nmatch-field = \"id\"\n\
             [[steps]]\nexpect = \"c\"\nmatch-field = \"id\"\n",
            "step 3: send `c` is already expected by step 2: one expect per send (count = N",
        ),
        (
            "[[steps]]\nname = \"c\"\nsend = \"x\"\n[[steps]]\nexpect = \"c\"\nmatch-field = \"id\"\n\
             check-json = { \"result\" = 1 }\n",
            "check-json key `result` is not a JSON pointer",
        ),
        (
            "[[steps]]\nname = \"c\"\nsend = \"x\"\n[[steps]]\nexpect = \"c\"\nmatch-field = \"id\"\n\
             count = 2\nuntil = \"done\"\n",
            "give count or until, not both",
        ),
        ("[[steps]]\nexpect-regex = \"x\"\nsince = \"nope\"\n", "since `nope`, but no send"),
        ("[[steps]]\nsend = \"x\"\ncheck-regex = \"y\"\n", "check-json/check-regex does not apply"),
        ("[[steps]]\nexpect-regex = \"{seq}(\"\n", "bad regex"),
        // A step in a repeat is numbered in its block, not over the whole flow.
        (
            "[[steps]]\nsend = \"x\"\n[[steps]]\nrepeat = 2\nsteps = [ { send = \"a\" }, { expect-regex = \"(\" } ]\n",
            "step 2: in its steps, step 2: bad regex",
        ),
        (
            "[[steps]]\nname = \"c\"\nsend = \"x\"\n[[steps]]\nrepeat = 2\nsteps = [ { expect = \"c\", match-field = \"id\" } ]\n\
             [[steps]]\nexpect = \"c\"\nmatch-field = \"id\"\n",
            "step 3: send `c` is already expected by step 2, in its steps, step 1",
        ),
        ("[[steps]]\nsleep = \"200h\"\n", "step 1: sleep `200h` is longer than 7 days"),
    ];
    for (text, wanted) in cases {
        let error = compile(text).unwrap_err();
        assert!(error.contains(wanted), "{text}: {error}");
        assert_eq!(error.lines().count(), 1, "{error}");
    }
}
