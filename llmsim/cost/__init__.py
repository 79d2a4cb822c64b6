"""ModelSpec x workload -> [Op]. Knows no hardware.

- op: the Op dataclass and the formula registry; formulas/: the formulas, one module per family
- symbolic: the expressions that keep every formula's arithmetic
- workload: the workload options (CostOptions) and their checks
- graph: the entry points (build_ops); builder and blocks/: the graph builder; template: graph templates
- parameters: parameter counts from the built graph

Importing this package registers every formula (the `formulas` import below), so any use of the
registry, which reaches `cost.op` through this package, finds them all.
"""

from . import formulas  # noqa: F401  (registers the formulas)
