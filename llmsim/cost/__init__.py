"""ModelSpec x workload -> [Op]: the formula registry (ops), the expressions that keep every formula's
arithmetic (symbolic), the workload options (workload) and the graph builder (graph and its blocks).
Knows no hardware."""
