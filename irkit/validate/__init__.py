"""`irkit validate`: the cost model's predictions against measured times.

- `suite`: the cases -- every example document under several schedules
  (its own, none, and meaningful alternatives) at sizes from cache-resident
  to DRAM-bound;
- `measure`: compile each variant and time it in its steady state
  (`irkit.timing`), the schedules of one kernel and size alternated;
- `stats`: absolute percentage error, median and percentiles, Kendall's tau-b;
- `report`: the Markdown table and the predicted-vs-measured plot.

The command itself is `irkit.tools.validate`.
"""
