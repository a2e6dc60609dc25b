"""R2D2 on a data lake: which tables are contained in others, and which of them can be deleted safely.

    from dqkit.lake import find_containment
    result = find_containment("/data/lake", s=4, t=10, seed=0, verify=True, plan=True)
    result.contained            # {(parent, child)}: child's rows all appear in parent
    result.plan.delete          # tables Opt-Ret would delete, result.plan.rebuild_from their parents

Stages (each only removes candidate edges, none ever removes a true one):
SGB (schema containment, ``dqkit.lake.sgb``) -> MMP (min/max ranges from Parquet footers or one
aggregate per table) -> CLP (a seeded sample of at most t child rows, chosen by predicates on up to s
columns, anti-joined null-safely against the parent) -> optional exact verification (fingerprint
anti-join, CM with its row count). ``ground_truth`` is the exact all-pairs answer, and
``pairwise_ground_truth`` the paper's literal row-pair hashing (small inputs). Safe deletion:
``dqkit.lake.optret`` (Opt-Ret ILP with HiGHS, Dyn-Lin for chains). Dynamic updates:
``ContainmentGraph.add_dataset / update_dataset / remove_dataset``.
"""
from __future__ import annotations

from dqkit.runtime.lazy import lazy_face

__all__ = ['find_containment', 'LakeResult', 'ContainmentGraph', 'load_lake', 'Lake', 'LakeTable',
           'ColumnStats', 'sgb', 'SGBResult', 'schema_containment_brute_force', 'mmp_keeps', 'clp_sample',
           'clp_keeps', 'required_samples', 'containment_fraction', 'pairwise_hash_containment', 'ground_truth', 'pairwise_ground_truth',
           'opt_ret', 'ilp', 'dyn_lin', 'CostModel', 'DeletionPlan', 'load_costs',
           'parse_costs', 'TransformationProvider', 'LineageProvider', 'MappingProvider', 'AssumeKnown', 'flatten',
           'flatten_schema', 'lineage_provider', 'result_from_graph', 'plan_for', 'STAGES', 'EdgeState',
           'build_graph']

__getattr__, __dir__ = lazy_face(__name__, __all__)
