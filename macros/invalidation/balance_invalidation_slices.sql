{% macro balance_invalidation_slices(watermarks, include_landed=false) -%}
    {#-
        The invalidation predicates of a run, one row per slice, as a standalone query:
        - policy_change: each reserve_policies version observed (captured by its snapshot) after
          watermarks.policy_observed_at -> (segment, from its effective_from_date);
        - segment_change: each merchants version observed after it -> (merchant, from its effective
          date): under "latest knowledge wins" (reserve_rates_as_of) a version decides the merchant's
          segment from its own effective date on and leaves the days before it to the versions
          observed earlier, so no earlier day changes, whichever segment it left or joined;
        - manual: the replay asked for with --vars (see replay_request);
        - new_events: accepted events past watermarks.audited_events -> the keys they touch, from the
          earliest event date among them.
        Columns: cause, segment, merchant_id, from_date, observed_at, after_ingest_seq (new_events
        only), predicate (readable SQL).
        Without a checkpoint (first build) only the new_events slice is returned.
        include_landed=true (the dry-run plan) also counts what the next build will pick up: landed
        policy and merchant rows whose values differ from the snapshots' current versions (the
        snapshots will capture them; observed_at null), and landed events past the
        classification's watermark (whether they will be accepted is not known yet).
    -#}
    {%- set request = replay_request() -%}
    {%- set observed_after = "timestamp " ~ quoted_literal(watermarks.policy_observed_at or '1970-01-01 00:00:00') -%}
    with policy_change as (
        select
            'policy_change' as cause,
            segment,
            cast(null as string) as merchant_id,
            effective_from_date as from_date,
            observed_at,
            cast(null as bigint) as after_ingest_seq
        from {{ ref('int_reserve_policy_versions') }}
        where {{ 'true' if watermarks.has_checkpoint else 'false' }}
            and observed_at > {{ observed_after }}  -- noqa: LT02 (sqlfluff mis-reads the templated literal)
        {% if include_landed %}
            union all
            select 'policy_change', landed.segment, cast(null as string), landed.effective_from_date, cast(null as timestamp), cast(null as bigint)
            from ({{ reference_rows_not_captured('reserve_policies') }}) as landed
        {% endif %}
    ),

    segment_change as (
        select
            'segment_change' as cause,
            cast(null as string) as segment,
            merchant_id,
            segment_effective_from_date as from_date,
            observed_at,
            cast(null as bigint) as after_ingest_seq
        from {{ ref('int_merchant_segment_versions') }}
        where {{ 'true' if watermarks.has_checkpoint else 'false' }}
            and observed_at > {{ observed_after }}  -- noqa: LT02
        {% if include_landed %}
            union all
            select
                'segment_change', cast(null as string), landed.merchant_id, landed.segment_effective_from_date,
                cast(null as timestamp), cast(null as bigint)
            from ({{ reference_rows_not_captured('merchants') }}) as landed
        {% endif %}
    ),

    manual as (
        select
            'manual' as cause,
            {{ quoted_literal(request.segment) if request and request.segment else 'cast(null as string)' }} as segment,
            {{ quoted_literal(request.merchant_id) if request and request.merchant_id else 'cast(null as string)' }} as merchant_id,
            {{ "date " ~ quoted_literal(request.from_date) if request else 'cast(null as date)' }} as from_date,
            cast(null as timestamp) as observed_at,
            cast(null as bigint) as after_ingest_seq
        where {{ 'true' if request and watermarks.has_checkpoint else 'false' }}
    ),

    new_events as (
        select
            'new_events' as cause,
            cast(null as string) as segment,
            cast(null as string) as merchant_id,
            min(event_date) as from_date,
            cast(null as timestamp) as observed_at,
            cast({{ watermarks.audited_events }} as bigint) as after_ingest_seq
        from (
            select event_date, ingest_seq from {{ ref('int_payment_events_classified') }}
            where is_accepted and ingest_seq > {{ watermarks.audited_events }}  -- noqa: LT02
            {% if include_landed %}
                union all
                select event_date, ingest_seq from {{ ref('stg_payledger__payment_events') }}
                where ingest_seq > (select coalesce(max(ingest_seq), 0) from {{ ref('int_payment_events_classified') }})
            {% endif %}
        )
        having count(*) > 0
    ),

    slices as (
        select * from policy_change
        union all
        select * from segment_change
        union all
        select * from manual
        union all
        select * from new_events
    )

    select
        cause,
        segment,
        merchant_id,
        from_date,
        observed_at,
        after_ingest_seq,
        case
            when cause = 'new_events' then concat('ingest_seq > ', cast(after_ingest_seq as string))
            when segment is not null then concat(
                "event_date >= date '", cast(from_date as string), "' and merchant_id in ",
                "(merchants in segment '", segment, "' on some day >= date '", cast(from_date as string), "')"
            )
            else concat(
                "event_date >= date '", cast(from_date as string), "' and merchant_id = '", merchant_id, "'"
            )
        end as predicate
    from slices
{%- endmacro %}
