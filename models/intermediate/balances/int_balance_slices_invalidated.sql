{{ config(materialized='table', tblproperties=log_checkpoint_tblproperties()) }}

{#-
    The invalidation predicates of this run (see balance_invalidation_slices), computed from the
    snapshots and from the watermarks the balance models consumed. Rebuilt on every run; the
    append-only history is balance_invalidations.
-#}

with slices as (
    {{ balance_invalidation_slices(balance_watermarks()) }}
)

select * from slices
