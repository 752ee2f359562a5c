{% macro balance_replay_plan() -%}
    {#-
        Dry run: prints what the next balance build would replay, writing nothing. Honours the manual
        replay vars (replay_segment | replay_merchant, replay_from), validated first. For each slice:
        cause, predicate, merchants, keys and the event rows it would read (a count over the slice,
        not an estimate from statistics; landed events not yet classified are counted too). Returns the plan as a list of dicts.
        Usage: dbt run-operation balance_replay_plan [--vars '{...}']
    -#}
    {%- do validate_replay_request() -%}
    {%- if load_relation(ref('int_merchant_daily_balances')) is none -%}
        {{ log(
            "Nothing has been built yet (no " ~ ref('int_merchant_daily_balances') ~ "): "
            ~ "the next dbt build is a full build of the balance view, nothing to replay.",
            info=true
        ) }}
        {{ log("PLAN_JSON []", info=true) }}
        {{ return([]) }}
    {%- endif -%}
    {%- set query -%}
        with slices as (
            {{ balance_invalidation_slices(balance_watermarks(), include_landed=true) }}
        ),

        slice_merchants as (
            {{ invalidated_merchants('slices') }}
        ),

        events as (
            select event_id, merchant_id, currency, event_date, ingest_seq
            from {{ ref('int_payment_events_classified') }}
            where is_accepted
            union all
            select event_id, merchant_id, currency, event_date, ingest_seq
            from {{ ref('stg_payledger__payment_events') }}
            where ingest_seq > (select coalesce(max(ingest_seq), 0) from {{ ref('int_payment_events_classified') }})
        ),

        slice_events as (
            select
                slice_merchants.cause,
                slice_merchants.segment,
                slice_merchants.slice_merchant_id,
                slice_merchants.from_date,
                slice_merchants.observed_at,
                count(distinct slice_merchants.merchant_id) as merchants,
                count(distinct events.merchant_id, events.currency) as keys_affected,
                count(events.event_id) as event_rows_to_read
            from slice_merchants
            left join events
                on slice_merchants.merchant_id = events.merchant_id
                and events.event_date >= slice_merchants.from_date
            group by 1, 2, 3, 4, 5

            union all

            select
                slices.cause, slices.segment, slices.merchant_id, slices.from_date, slices.observed_at,
                count(distinct events.merchant_id),
                count(distinct events.merchant_id, events.currency),
                count(events.event_id)
            from slices
            inner join events
                on slices.cause = 'new_events'
                and events.ingest_seq > slices.after_ingest_seq
            group by 1, 2, 3, 4, 5
        )

        select
            slices.cause,
            slices.predicate,
            coalesce(slice_events.merchants, 0) as merchants,
            coalesce(slice_events.keys_affected, 0) as keys_affected,
            coalesce(slice_events.event_rows_to_read, 0) as event_rows_to_read
        from slices
        left join slice_events
            on {{ in_same_slice('slices', 'slice_events') }}
        order by 1, 2
    {%- endset -%}
    {%- set rows = run_query(query) -%}
    {%- set plan = [] -%}
    {%- for row in rows.rows -%}
        {%- do plan.append({'cause': row[0], 'predicate': row[1], 'merchants': row[2] | int, 'keys': row[3] | int, 'event_rows_to_read': row[4] | int}) -%}
    {%- endfor -%}
    {%- if plan -%}
        {{ log("Replay plan (nothing written): " ~ plan | length ~ " slice(s)", info=true) }}
        {%- for slice in plan -%}
            {#- slice['keys'], not slice.keys: attribute access on a dict finds its keys() method first. -#}
            {{ log(
                "  " ~ slice.cause ~ ": " ~ slice.predicate ~ ": " ~ slice['merchants'] ~ " merchant(s), "
                ~ slice['keys'] ~ " key(s), " ~ slice['event_rows_to_read'] ~ " event row(s) to read",
                info=true
            ) }}
        {%- endfor -%}
        {{ log("PLAN_JSON " ~ plan | tojson, info=true) }}
    {%- else -%}
        {{ log("Replay plan (nothing written): nothing to replay, the view is up to date.", info=true) }}
        {{ log("PLAN_JSON []", info=true) }}
    {%- endif -%}
    {{ return(plan) }}
{%- endmacro %}
