{% macro _daily_balance_aggregate(postings) -%}
    {#- Private: sums postings per (merchant_id, currency, balance_date = event_date). -#}
    select
        merchant_id,
        currency,
        event_date as balance_date,
        cast(sum(available_delta) as {{ money_type() }}) as available_change,
        cast(sum(pending_delta) as {{ money_type() }}) as pending_change,
        cast(sum(reserve_delta) as {{ money_type() }}) as reserve_change,
        count(*) as event_count,
        max(ingest_seq) as source_watermark,
        max(event_time) as last_event_time
    from {{ postings }}
    group by 1, 2, 3
{%- endmacro %}
