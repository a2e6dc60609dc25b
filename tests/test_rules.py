"""The rule model and its parsers (dqkit.rules): no Spark needed."""
from __future__ import annotations

import pytest

from dqkit.errors import RuleError, UnknownColumnError
from dqkit.rules import (
    Attr, Const, DenialConstraint, FunctionalDependency, Job, Predicate, as_rules, load_rules, parse_rule,
    parse_rules, rules_from_yaml, validate_rules,
)

TAX = {"tid": "string", "name": "string", "zipcode": "int", "city": "string", "state": "string",
       "salary": "bigint", "rate": "double", "flag": "boolean", "tags": "array<string>", "born": "date"}


def test_fd_single_and_multi_attribute():
    r = parse_rule("zipcode -> city")
    assert isinstance(r, FunctionalDependency) and r.lhs == ("zipcode",) and r.rhs == ("city",)
    r = parse_rule("phi: zip, street -> city, state")
    assert r.name == "phi" and r.lhs == ("zip", "street") and r.rhs == ("city", "state")
    dcs = r.as_denial_constraints()
    assert [str(d) for d in dcs] == ["not(t1.zip = t2.zip and t1.street = t2.street and t1.city != t2.city)",
                                     "not(t1.zip = t2.zip and t1.street = t2.street and t1.state != t2.state)"]


def test_dc_two_tuples_with_inequalities():
    r = parse_rule("phi2: not(t1.salary > t2.salary and t1.rate < t2.rate)")
    assert isinstance(r, DenialConstraint) and r.arity == 2 and r.name == "phi2"
    assert r.predicates == (Predicate(Attr(1, "salary"), ">", Attr(2, "salary")),
                            Predicate(Attr(1, "rate"), "<", Attr(2, "rate")))
    assert not r.symmetric


def test_dc_one_tuple_with_constants():
    r = parse_rule("not(t1.state = 'NY' and t1.zipcode >= 20000)")
    assert r.arity == 1
    assert r.predicates[0].right == Const("NY") and r.predicates[1].right == Const(20000)


@pytest.mark.parametrize("text", [
    "not(t1.a <= t2.b & t1.c != t2.c)", "¬(t1.a ≤ t2.b ∧ t1.c ≠ t2.c)", "!(t1.a <= t2.b && t1.c <> t2.c)",
    "NOT(t1.a <= t2.b AND t1.c != t2.c)", "t1&t2&LTE(t1.a,t2.b)&IQ(t1.c,t2.c)"])
def test_equivalent_spellings(text):
    assert str(parse_rule(text)) == "not(t1.a <= t2.b and t1.c != t2.c)"


def test_normalisation_puts_t1_left_and_constants_right():
    r = parse_rule("not(t2.a < t1.b and 5 > t1.c)")
    assert str(r) == "not(t1.b > t2.a and t1.c < 5)"


def test_holoclean_format():
    r = parse_rule("t1&t2&EQ(t1.zip,t2.zip)&IQ(t1.city,t2.city)")
    assert str(r) == "not(t1.zip = t2.zip and t1.city != t2.city)" and r.symmetric
    r = parse_rule('t1&EQ(t1.state,"NY")&GT(t1.zipcode,20000)')
    assert r.arity == 1


def test_symmetry():
    assert parse_rule("not(t1.zip = t2.zip and t1.city != t2.city)").symmetric
    assert parse_rule("not(t1.a < t2.b and t1.b > t2.a)").symmetric
    assert not parse_rule("not(t1.a < t2.a)").symmetric
    assert not parse_rule("not(t1.a = t2.a and t1.s = 'x')").symmetric


def test_constants_strings_with_quotes_and_numbers():
    r = parse_rule(r"not(t1.city = 'O\'Hare' and t1.rate > -1.5e1)")
    assert r.predicates[0].right == Const("O'Hare") and r.predicates[1].right == Const(-15.0)


def test_plain_text_file_with_names_and_comments(tmp_path):
    p = tmp_path / "rules.txt"
    p.write_text("# tax rules\nphiF: zipcode -> city\n\nphi2: not(t1.salary > t2.salary and t1.rate < t2.rate)\n"
                 "t1&t2&EQ(t1.zip,t2.zip)&IQ(t1.city,t2.city)\n")
    rules = load_rules(p)
    assert [r.name for r in rules][:2] == ["phiF", "phi2"] and len(rules) == 3


def test_yaml_forms(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("rules:\n  - name: phiF\n    rule: zipcode -> city\n  - 'not(t1.a > t2.a)'\n")
    assert [r.name for r in load_rules(p)] == ["phiF", "not(t1.a > t2.a)"]
    assert [r.name for r in rules_from_yaml("a: x -> y\nb: not(t1.x < t2.x)\n")] == ["a", "b"]
    with pytest.raises(RuleError, match="not valid YAML"):
        rules_from_yaml("rules: [unclosed")


def test_shipped_table1_rules_parse():
    rules = load_rules("data/bigdansing_table1_rules.yaml")
    assert [r.name for r in rules] == ["phiF", "phiD"]


def test_python_api_builds_the_same_rules():
    built = DenialConstraint("phi2", (Predicate(Attr(1, "salary"), ">", Attr(2, "salary")),
                                      Predicate(Attr(1, "rate"), "<", Attr(2, "rate"))))
    assert built.predicates == parse_rule("not(t1.salary > t2.salary and t1.rate < t2.rate)").predicates
    assert as_rules({"f": "a -> b"})[0] == FunctionalDependency("f", ("a",), ("b",), "a -> b")


# ------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("text, where, cause", [
    ("not(t1.a > t2.a", "column 16", "expected ')'"),
    ("not(t1.a >> t2.b)", "column 11", "expected an attribute"),
    ("not(t1.a > t2.a or t1.b < t2.b)", "column 17", "'or' is not allowed"),
    ("not(t3.a < t2.a)", "column 5", "expected t1.<column>"),
    ("zipcode city", "column 1", "cannot tell the rule form"),
    ("not(t1.a + 1 > t2.a)", "column 10", "unexpected character"),
    ("t1&t2&XX(t1.a,t2.a)", "column 7", "expected EQ"),
    ("a -> ", "column 5", "expected name"),
])
def test_parse_errors_name_rule_position_and_cause(text, where, cause):
    with pytest.raises(RuleError) as exc:
        parse_rule(text, name="r7")
    msg = str(exc.value)
    assert "rule 'r7'" in msg and where in msg and cause in msg


def test_no_predicate_on_second_tuple_is_rejected():
    with pytest.raises(RuleError, match="declares t2 but no predicate reads t2"):
        parse_rule("t1&t2&EQ(t1.zip,t1.zip)")
    with pytest.raises(RuleError, match="no predicate relates t1 to t2"):
        parse_rule("not(t1.state = 'NY' and t2.state = 'CA')")


def test_fd_with_attribute_on_both_sides_is_rejected():
    with pytest.raises(RuleError, match="both sides"):
        parse_rule("a, b -> b")


def test_line_number_in_rules_file_errors():
    with pytest.raises(RuleError, match="line 2: rule"):
        parse_rules("a -> b\nnot(t1.x >)\n")


def test_duplicate_names_rejected():
    with pytest.raises(RuleError, match="more than once"):
        parse_rules("r: a -> b\nr: c -> d\n")


def test_unknown_column():
    with pytest.raises(UnknownColumnError, match="rule 'phi'.*unknown column 'zip'"):
        validate_rules([parse_rule("zip -> city", "phi")], TAX)
    with pytest.raises(UnknownColumnError, match="did you mean 'city'"):
        validate_rules([parse_rule("not(t1.City != t2.city)", "phi")], TAX)


@pytest.mark.parametrize("text, cause", [
    ("not(t1.city < t2.salary)", "cannot be compared"),
    ("not(t1.salary > t2.salary and t1.city < 5)", "cannot be compared"),
    ("not(t1.flag < t2.flag)", "booleans cannot be ordered"),
    ("not(t1.tags = t2.tags)", "cannot be compared"),
])
def test_uncomparable_types(text, cause):
    with pytest.raises(RuleError, match=cause):
        validate_rules([parse_rule(text, "bad")], TAX)


def test_comparable_types_pass_and_the_same_rule_is_refused_once_one_side_is_a_string():
    rule = parse_rule("not(t1.salary > t2.rate and t1.born < '2000-01-01' and t1.flag != t2.flag)")
    assert validate_rules([rule], TAX) is None  # bigint vs double, a date vs an ISO literal, boolean !=
    with pytest.raises(RuleError, match="types that cannot be compared"):
        validate_rules([rule], {**TAX, "rate": "string"})
    with pytest.raises(RuleError, match="booleans cannot be ordered"):
        validate_rules([parse_rule("not(t1.salary > t2.rate and t1.flag < t2.flag)")], TAX)


# ------------------------------------------------------------------------------------ jobs
def test_job_validation_rejects_missing_detect_and_undefined_labels():
    job = Job("j").add_input("x.csv", "S").add_block("zipcode", "S")
    with pytest.raises(RuleError, match="no Detect"):
        job.rule()
    job = Job("j").add_input("x.csv", "S").add_detect(lambda c: c, "T")
    with pytest.raises(RuleError, match="undefined label 'T'"):
        job.rule()
    job = Job("j").add_input("x.csv", "S").add_iterate("M", lambda b: b[0], "S", "W", schema="tid string")
    with pytest.raises(RuleError, match="undefined label 'W'"):
        job.validate()
    ok = Job("j").add_input("x.csv", "S").add_block("zipcode", "S").add_detect(lambda c: c, "S").rule()
    assert ok.name == "j" and "Detect" in str(ok)


def test_a_binary_rules_file_is_refused_as_not_utf8_text(tmp_path):
    p = tmp_path / "rules.txt"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    with pytest.raises(RuleError, match=r"rules\.txt is binary, not text"):
        load_rules(p)
    y = tmp_path / "rules.yaml"
    y.write_bytes(b"rules:\n  - \xff\xfe\n")
    with pytest.raises(RuleError, match="not UTF-8 text"):
        load_rules(y)


def test_a_rule_with_ten_thousand_predicates_is_refused_quickly_naming_the_limit(wall_clock):
    from dqkit.rules import MAX_PREDICATES

    text = "not(" + " and ".join(f"t1.a{i} > {i}" for i in range(10_000)) + ")"
    with wall_clock.within(10, "refusing 10,000 predicates"), \
            pytest.raises(RuleError, match=f"10000 predicates; dqkit accepts at most {MAX_PREDICATES}"):
        parse_rule(text, "huge")
    with pytest.raises(RuleError, match=f"at most {MAX_PREDICATES} attributes"):
        parse_rule(", ".join(f"a{i}" for i in range(MAX_PREDICATES)) + " -> b")
    built = DenialConstraint("built", tuple(Predicate(Attr(1, "salary"), ">", Const(i)) for i in range(1001)), 1)
    with pytest.raises(RuleError, match="'built' has 1001 predicates"):
        validate_rules([built], TAX)
