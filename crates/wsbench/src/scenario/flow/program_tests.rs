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
    let up_to = compile(
        "[[steps]]\nname = \"sub\"\nsend = '{\"id\":1}'\n[[steps]]\nexpect = \"sub\"\nmatch-field = \"id\"\n\
         count = 3\nuntil = 'complete'\n",
    )
    .unwrap();
    assert!(matches!(up_to.send("sub").unwrap().1, Replies::UpTo(3, _)));
    let vars = Vars { conn: 4, seq: 9, ..Vars::default() };
    assert!(checks.pass(r#"{"id":"s9","c":4}"#, &vars, None, &Captured::default()));
    assert!(!checks.pass(r#"{"id":"s8","c":4}"#, &vars, None, &Captured::default()), "another send's reply");
    assert!(!checks.pass(r#"{"id":"s9","c":5}"#, &vars, None, &Captured::default()), "another connection's");
    assert!(!checks.pass("not json \"c\":4", &vars, None, &Captured::default()));
    let pattern = Pattern::compile("seq {seq} of {conn}").unwrap();
    assert!(pattern.regex(&vars, None, &Captured::default()).is_match("seq 9 of 4"));
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
             count = 0\nuntil = \"done\"\n",
            "count is 1 to",
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

#[test]
fn too_many_steps_counting_those_inside_repeats_are_refused() {
    let inner = "{ send = 'x' },".repeat(MAX_FLOW_STEPS);
    let error = compile(&format!("[[steps]]\nrepeat = 2\nsteps = [{inner}]\n")).unwrap_err();
    assert_eq!(
        error,
        "scenario file [[flow.steps]]: 1,001 steps (counting those inside repeats): at most 1,000; \
         loop with repeat = N rather than writing steps out"
    );
    let inner = "{ send = 'x' },".repeat(MAX_FLOW_STEPS - 1);
    compile(&format!("[[steps]]\nrepeat = 2\nsteps = [{inner}]\n")).unwrap();
}

#[test]
fn a_repeat_past_its_bound_is_refused_and_until_end_is_the_way_to_loop() {
    let error = compile("[[steps]]\nrepeat = 1000000000000\nsteps = [{ send = 'x' }]\n").unwrap_err();
    assert_eq!(
        error,
        "scenario file [[flow.steps]]: step 1: repeat = 1,000,000,000,000 is too many rounds: at most \
         1,000,000,000; to loop until the run ends, write repeat = \"until-end\""
    );
    compile("[[steps]]\nrepeat = 1000000000\nsteps = [{ send = 'x' }]\n").unwrap();
    compile("[[steps]]\nrepeat = \"until-end\"\nsteps = [{ send = 'x' }]\n").unwrap();
}

#[test]
fn sends_repeated_before_their_expect_are_bounded() {
    let flow = |times: &str| {
        format!(
            "[[steps]]\nrepeat = {times}\nsteps = [{{ name = \"call\", send = '{{\"id\":{{seq}}}}' }}]\n\
             [[steps]]\nexpect = \"call\"\nmatch-field = \"id\"\n"
        )
    };
    compile(&flow("65536")).unwrap();
    let error = compile(&flow("65537")).unwrap_err();
    assert!(
        error.ends_with(
            "step 2: send `call` is repeated 65,537 times before this expect waits for its replies: at \
             most 65,536 sends may await replies at once; put the expect in the send's repeat"
        ),
        "{error}"
    );
    let error = compile(&flow("\"until-end\"")).unwrap_err();
    assert!(error.contains("send `call` is repeated without end before this expect"), "{error}");
    // Nested: the rounds multiply.
    let nested = "[[steps]]\nrepeat = 300\nsteps = [{ repeat = 300, steps = [{ name = \"call\", send = '{\"id\":{seq}}' }] }]\n\
                  [[steps]]\nexpect = \"call\"\nmatch-field = \"id\"\n";
    assert!(compile(nested).unwrap_err().contains("repeated 90,000 times"));
    // The expect inside the send's repeat awaits one at a time, however many rounds.
    let inside = "[[steps]]\nrepeat = \"until-end\"\nsteps = [{ name = \"call\", send = '{\"id\":{seq}}' }, \
                  { expect = \"call\", match-field = \"id\" }]\n";
    compile(inside).unwrap();
}

#[test]
fn patterns_and_checks_take_the_connections_data_row_as_literal_text() {
    let dir = std::env::temp_dir().join(format!("wsbench-flow-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("users.csv");
    std::fs::write(&path, "user\nal.ice\nbob\n").unwrap();
    let data = crate::config::DataTable::load(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let program = compile(
        "[[steps]]\nname = \"hi\"\nsend = '{\"id\":{seq},\"u\":\"{data.user}\"}'\n[[steps]]\nexpect = \"hi\"\n\
         match-field = \"id\"\ncheck-json = { \"/u\" = \"{data.user}\" }\ncheck-regex = 'hello {data.user}'\n",
    )
    .unwrap();
    let (_, _, checks) = program.send("hi").unwrap();
    let vars = Vars { conn: 2, seq: 1, ..Vars::default() };
    assert!(checks.pass(
        r#"{"id":1,"u":"al.ice","m":"hello al.ice"}"#,
        &vars,
        Some(&data),
        &Captured::default()
    ));
    // The value is matched as written: its `.` is no regex wildcard.
    assert!(!checks.pass(
        r#"{"id":1,"u":"al.ice","m":"hello alxice"}"#,
        &vars,
        Some(&data),
        &Captured::default()
    ));
    let bob = Vars { conn: 3, ..vars };
    assert!(
        !checks.pass(r#"{"id":1,"u":"al.ice","m":"hello al.ice"}"#, &bob, Some(&data), &Captured::default()),
        "another row's"
    );
    let pattern = Pattern::compile("^{data.user}:{conn}$").unwrap();
    assert!(pattern.regex(&bob, Some(&data), &Captured::default()).is_match("bob:3"));
    assert_eq!(serde_json::to_value(&pattern).unwrap(), "^{data.user}:{conn}$");
}

#[test]
fn captured_variables_fill_sends_patterns_and_checks_and_unset_ones_stay_as_written() {
    let program = compile(
        "[[steps]]\nname = \"sub\"\nsend = 's'\n[[steps]]\nexpect-regex = 'subscribed'\ncapture = { sub = \"/sub\" }\n\
         [[steps]]\nname = \"pub\"\nsend = '{\"sub\":\"{var.sub}\",\"n\":{seq}}'\n[[steps]]\nexpect = \"pub\"\n\
         match-field = \"n\"\ncheck-json = { \"/sub\" = \"{var.sub}\" }\ncheck-regex = '{var.sub}'\n",
    )
    .unwrap();
    let Op::Send { template, .. } = &program.ops[2] else { panic!("{:?}", program.ops) };
    let (vars, mut captured) = (Vars { seq: 3, ..Vars::default() }, Captured::default());
    assert_eq!(captured.missing(template), Some("sub"));
    captured.set("sub", "a.b".to_owned());
    assert_eq!(captured.missing(template), None);
    assert_eq!(render_with(template, &vars, None, &captured, false), r#"{"sub":"a.b","n":3}"#);
    let (_, _, checks) = program.send("pub").unwrap();
    assert!(checks.pass(r#"{"sub":"a.b","n":3}"#, &vars, None, &captured));
    assert!(!checks.pass(r#"{"sub":"axb","n":3}"#, &vars, None, &captured), "the regex is escaped");
    assert!(!checks.pass(r#"{"sub":"a.b","n":3}"#, &vars, None, &Captured::default()));
}
