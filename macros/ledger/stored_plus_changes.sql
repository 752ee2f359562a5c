{% macro stored_plus_changes(checkpoint, start, merchants, stored) -%}
    {#-
        Renders a query of the view's rows for the keys of `merchants` whose checkpoint rows changed
        from version `start` of `checkpoint` on (change_feed_relation): the stored row of `stored`
        plus, per key, the change of its checkpoint sums (inserted rows and post-images count up,
        pre-images and deleted rows down). Events are never taken out of the checkpoint, so the
        maxima (last_event_time, source_watermark, policy_observed_at) only grow.
    -#}
    with changes as (
        select
            *,
            _change_type in ('insert', 'update_postimage') as is_after
        from {{ change_feed_relation(checkpoint, start) }}
    ),

    changed_sums as (
        select
            changes.merchant_id,
            changes.currency,
            sum(case when changes.is_after then changes.available_change else -changes.available_change end)
                as available_delta,
            sum(case when changes.is_after then changes.pending_change else -changes.pending_change end)
                as pending_delta,
            sum(case when changes.is_after then changes.reserve_change else -changes.reserve_change end)
                as reserve_delta,
            max(case when changes.is_after then changes.last_event_time end) as last_event_time,
            max(case when changes.is_after then changes.source_watermark end) as source_watermark,
            max(case when changes.is_after then changes.policy_observed_at end) as policy_observed_at
        from changes
        left semi join {{ merchants }} as merchants
            on changes.merchant_id = merchants.merchant_id
        group by 1, 2
    )

    select
        changed_sums.merchant_id,
        changed_sums.currency,
        {{ stored_plus_posted('stored_rows', 'balance', 'changed_sums', 'delta') }},
        greatest(stored_rows.last_event_time, changed_sums.last_event_time) as last_event_time,
        greatest(stored_rows.source_watermark, changed_sums.source_watermark) as source_watermark,
        greatest(stored_rows.policy_observed_at, changed_sums.policy_observed_at) as policy_observed_at
    from changed_sums
    left join {{ stored }} as stored_rows
        on changed_sums.merchant_id = stored_rows.merchant_id
        and changed_sums.currency = stored_rows.currency
{%- endmacro %}
