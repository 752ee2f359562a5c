{{ config(materialized='table', tblproperties=log_checkpoint_tblproperties()) }}

{#-
    The merchants this run's replay slices (policy_change, segment_change, manual) invalidate, one
    row per slice and merchant (see invalidated_merchants). Computed once per run for the checkpoint,
    the view and the audit; rebuilt on every run like the slices.
-#}

with replay_slices as (
    select * from {{ ref('int_balance_slices_invalidated') }}
    where cause in ('policy_change', 'segment_change', 'manual')
),

slice_merchants as (
    {{ invalidated_merchants('replay_slices') }}
)

select * from slice_merchants
