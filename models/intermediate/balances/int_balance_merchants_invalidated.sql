{#-
    The merchants this run's replay slices (policy_change, segment_change, manual) invalidate, one
    row per slice and merchant (see invalidated_merchants). A view (the intermediate layer's
    default): the checkpoint, the view and the audit read it only in a run that replays a slice
    (slice_bounds), so a run without one builds and reads no table for it; a table rebuilt empty
    on every such run cost 0.8 s in a warm process and 1.5 s from a new one (Delta, 2026-12-06).
-#}

with replay_slices as (
    select * from {{ ref('int_balance_slices_invalidated') }}
    where cause in ('policy_change', 'segment_change', 'manual')
),

slice_merchants as (
    {{ invalidated_merchants('replay_slices') }}
)

select * from slice_merchants
