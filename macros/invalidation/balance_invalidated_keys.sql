{% macro balance_invalidated_keys(balance_view) -%}
    {#-
        The (merchant_id, currency) keys of `balance_view` that a run must recompute, from the
        watermarks stored in the view (max source_watermark, max policy_observed_at):
        - keys touched by accepted events past the source watermark (new and late events);
        - keys of merchants with a segment version observed after the policy watermark;
        - keys of merchants that ever belonged to a segment with a policy version observed after it.
        Returns a query (with its own `with`) that can stand alone or be nested in a CTE.
    -#}
    with watermarks as (
        select
            coalesce(max(source_watermark), 0) as source_watermark,
            coalesce(max(policy_observed_at), timestamp '1970-01-01 00:00:00') as policy_observed_at
        from {{ balance_view }}
    ),

    new_event_keys as (
        select distinct events.merchant_id, events.currency
        from {{ ref('int_payment_events_classified') }} as events
        cross join watermarks
        where events.is_accepted and events.ingest_seq > watermarks.source_watermark
    ),

    moved_merchants as (
        select segments.merchant_id
        from {{ ref('int_merchant_segment_versions') }} as segments
        cross join watermarks
        where segments.observed_at > watermarks.policy_observed_at
    ),

    repriced_merchants as (
        select segments.merchant_id
        from {{ ref('int_reserve_policy_versions') }} as policies
        cross join watermarks
        inner join {{ ref('int_merchant_segment_versions') }} as segments
            on policies.segment = segments.segment
        where policies.observed_at > watermarks.policy_observed_at
    ),

    invalidated_merchants as (
        select merchant_id from moved_merchants
        union
        select merchant_id from repriced_merchants
    ),

    invalidated_merchant_keys as (
        select balances.merchant_id, balances.currency
        from {{ balance_view }} as balances
        inner join invalidated_merchants
            on balances.merchant_id = invalidated_merchants.merchant_id
    )

    select merchant_id, currency from new_event_keys
    union
    select merchant_id, currency from invalidated_merchant_keys
{%- endmacro %}
