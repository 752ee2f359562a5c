{% macro balance_freshness() -%}
    {#-
        Reports how far the balance view is behind its inputs, writing nothing:
        - watermark lag: landed event rows past the view's source_watermark (and the age of the
          oldest of them);
        - the oldest invalidation not yet replayed: the earliest snapshot version captured after the
          replayed policy watermark, or the earliest landed event not yet folded; "none" when clean;
        - landed reference rows whose values the snapshots have not captured yet (the next build will);
        - the oldest last-reconciled time over all keys: per slice of reconcile_slices, the last
          reconciliation that compared it and passed (a full one compares every slice), and the
          oldest of those; null while some slice has never passed (slices_never_reconciled says
          how many).
        Usage: dbt run-operation balance_freshness. Logs one line "FRESHNESS_JSON {...}" too. Before
        the first build it says so and logs {"view_built": false}.
    -#}
    {%- set view = load_relation(ref('merchant_balance_current')) -%}
    {%- if view is none -%}
        {%- set report = {'view_built': false} -%}
        {{ log("Nothing has been built yet: " ~ ref('merchant_balance_current') ~ " does not exist; run dbt build first.", info=true) }}
        {{ log("FRESHNESS_JSON " ~ report | tojson, info=true) }}
        {{ return(report) }}
    {%- endif -%}
    {%- set marks = balance_watermarks() -%}
    {%- set slices = reconcile_slices() -%}
    {%- set runs = load_relation(reconciliation_runs()) -%}
    {#- Before the first reconciliation, the runs table does not exist: no rows. -#}
    {%- set runs_rows = runs if runs is not none else
        "(select 'pass' as status, false as is_full, 0 as slices, cast(array() as array<int>) as checked_slices, "
        ~ "cast(null as timestamp) as reconciled_at where false)" -%}
    {%- set query -%}
        with view_mark as (
            select coalesce(max(source_watermark), 0) as source_watermark from {{ view }}
        ),

        landed as (
            select events.ingest_seq, events.ingested_at
            from {{ source('payledger', 'payment_events') }} as events
            cross join view_mark
            where events.ingest_seq > view_mark.source_watermark
        ),

        unreplayed_versions as (
            select dbt_valid_from as observed_at from {{ ref('snp_payledger__reserve_policies') }}
            where dbt_valid_from > timestamp {{ quoted_literal(marks.policy_observed_at or '1970-01-01 00:00:00') }}
            union all
            select dbt_valid_from as observed_at from {{ ref('snp_payledger__merchants') }}
            where dbt_valid_from > timestamp {{ quoted_literal(marks.policy_observed_at or '1970-01-01 00:00:00') }}
        ),

        uncaptured_reference_rows as (
            {# Landed rows whose values differ from their snapshot's current version: the next build captures them. #}
            select segment as reference_key from ({{ reference_rows_not_captured('reserve_policies') }})
            union all
            select merchant_id as reference_key from ({{ reference_rows_not_captured('merchants') }})
        ),

        slice_reconciliations as (
            {# Per slice, the last reconciliation that compared it and passed (none yet: null). #}
            select slice_ids.id as reconciliation_slice, max(runs.reconciled_at) as last_reconciled_at
            from range({{ slices }}) as slice_ids
            left join {{ runs_rows }} as runs
                on runs.status = 'pass'
                and (runs.is_full or (runs.slices = {{ slices }} and array_contains(runs.checked_slices, cast(slice_ids.id as int))))
            group by 1
        )

        select
            (select source_watermark from view_mark) as view_source_watermark,
            (select count(*) from landed) as landed_rows_behind,
            cast((select min(ingested_at) from landed) as string) as oldest_unfolded_ingested_at,
            cast((select min(observed_at) from unreplayed_versions) as string) as oldest_unreplayed_version_at,
            cast(current_timestamp() as string) as checked_at,
            (select count(*) from uncaptured_reference_rows) as reference_rows_not_captured,
            cast((
                select if(count_if(last_reconciled_at is null) = 0, min(last_reconciled_at), null)
                from slice_reconciliations
            ) as string) as oldest_last_reconciled_at,
            (select count_if(last_reconciled_at is null) from slice_reconciliations) as slices_never_reconciled
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {%- set oldest = [row[2], row[3]] | reject('none') | sort | first if (row[2] or row[3]) else none -%}
    {%- set report = {
        'view_built': true,
        'view_source_watermark': row[0] | int,
        'landed_rows_behind': row[1] | int,
        'oldest_unfolded_ingested_at': row[2],
        'oldest_unreplayed_version_at': row[3],
        'oldest_invalidation_not_replayed': oldest or 'none',
        'reference_rows_not_captured': row[5] | int,
        'reconcile_slices': slices,
        'oldest_last_reconciled_at': row[6],
        'slices_never_reconciled': row[7] | int,
        'checked_at': row[4],
    } -%}
    {{ log(
        "Balance view freshness: " ~ report.landed_rows_behind ~ " landed event row(s) behind (view watermark "
        ~ report.view_source_watermark ~ "); " ~ report.reference_rows_not_captured
        ~ " landed reference row(s) not yet captured by the snapshots; oldest invalidation not yet replayed: "
        ~ report.oldest_invalidation_not_replayed ~ "; oldest last reconciliation of a key: "
        ~ (report.oldest_last_reconciled_at or "none yet (" ~ report.slices_never_reconciled ~ " of " ~ slices ~ " slice(s) never reconciled)"),
        info=true
    ) }}
    {{ log("FRESHNESS_JSON " ~ report | tojson, info=true) }}
    {{ return(report) }}
{%- endmacro %}
