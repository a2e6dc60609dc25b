"""The rule model shared by detection, repair, Daisy and dedup (BigDansing §2.1, §3).

Three kinds of rule:

* ``FunctionalDependency`` -- ``zipcode -> city`` or ``zip, street -> city, state``.
* ``DenialConstraint`` -- ``not(t1.salary > t2.salary and t1.rate < t2.rate)`` over one or two
  tuples, with predicates ``=, !=, <, <=, >, >=`` between attributes or against constants. HoloClean's
  form ``t1&t2&EQ(t1.zip,t2.zip)&IQ(t1.city,t2.city)`` is accepted too.
* ``UDFRule`` -- a BigDansing job: Scope, Block, Iterate, Detect and GenFix as vectorised Python
  callables wired together by labels (App. A), see ``Job``.

Rule text is parsed by a small hand-written tokenizer and parser; nothing is ever evaluated.
Every error is a ``RuleError`` naming the rule, the position (1-based column) and the cause.
``validate_rules`` checks rules against a table schema (unknown columns, comparisons between types
that cannot be ordered) without running any Spark job.

NULL semantics: a predicate whose operand is NULL is false, as in SQL. A DC is violated only when all
its predicates are true, so a tuple with NULL in an attribute a predicate reads never violates it.

The package: ``model`` (attributes, predicates, FDs and DCs), ``udf`` (jobs of logical operators, and
``Rule``, any of the three), ``parse`` (text, files and YAML to rules) and ``validate`` (rules against a
schema). Imports go one way: validate -> parse -> udf -> model. No module imports Spark.
"""
from __future__ import annotations

from dqkit.errors import DqkitError
from dqkit.rules.model import (FLIP, HOLOCLEAN_OPS, MAX_PREDICATES, NEGATE, OPS, ORDERING_OPS, Attr, Const,
                               DenialConstraint, FunctionalDependency, Operand, Predicate)
from dqkit.rules.parse import as_rules, check_rule_size, load_rules, parse_rule, parse_rules, rules_from_yaml
from dqkit.rules.udf import Job, Operator, Rule, UDFRule, rule_text
from dqkit.rules.validate import type_class, validate_rules

__all__ = [
    "Attr", "Const", "Predicate", "DenialConstraint", "FunctionalDependency", "UDFRule", "Job",
    "Operator", "parse_rule", "parse_rules", "load_rules", "rules_from_yaml", "as_rules",
    "validate_rules", "check_rule_size", "type_class", "OPS", "NEGATE", "FLIP", "MAX_PREDICATES", "DqkitError",
    "ORDERING_OPS", "HOLOCLEAN_OPS", "Operand", "Rule", "rule_text",
]
