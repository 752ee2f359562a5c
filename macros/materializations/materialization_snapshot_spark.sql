{#-
    Wraps dbt-spark's `snapshot` materialization (dbt-spark 1.11.0; tests/unit/test_upstream.py
    notices a change): an existing snapshot whose source holds no change is left alone after one
    probe (four statements, the strategy's two included) instead of staged in a view, described
    seven times, merged (probed first on Iceberg) and the view dropped. The probe is dbt's own
    staging query (`snapshot_staging_table`, with dbt's strategy), so "no change" means what dbt's
    MERGE would have found: no insert, update or delete. It also checks that the table has every
    column of the source (dbt adds a new one even when no row changed). Anything else, and a new
    table, goes through dbt-spark's materialization (`_snapshot_is_idle` says which), with the
    project's staging (spark_build_snapshot_staging_table) and MERGE (spark__snapshot_merge_sql).

    Where run_dbt passes the tables' states (PAYLEDGER_TABLE_STATES: Delta,
    payledger/stored_maxima.py), the table also records the inputs it holds the result of, in its
    property `payledger.snapshot_inputs`: the data version (and its commit time) of every table the
    snapshot reads (through views; maintenance of a table leaves it as it was) and a checksum of its
    SQL, its config and the text of those views. It is set after each run of dbt's materialization
    (one more commit; an idle probe commits nothing, so a build with no new input commits nothing),
    and run_dbt reports it only while no commit but maintenance came after it. When this run's
    inputs equal the record, the table is what a run would leave, so the snapshot is left alone
    without the probe: on a warm Delta build with the tests' settings, no Spark job and 0.04-0.2 s
    against 8 jobs and 0.7-1.2 s a snapshot (2026-12-04). When they differ (a load committed to a
    table it reads), a change is all but certain: dbt's materialization runs without the idle
    probe, whose query its MERGE's (spark__snapshot_merge_sql) would run again: 1.9 s of a
    newcomer's segment-move build from a new process (2026-12-06).
-#}
{%- materialization snapshot, adapter='spark' -%}
    {%- set target_relation = adapter.get_relation(
        database=none, schema=model.schema, identifier=model.get('alias', model.get('name'))
    ) -%}
    {%- set inputs = _snapshot_inputs() -%}
    {%- set recorded = _snapshot_recorded_inputs() -%}
    {%- set unchanged = inputs is not none and inputs == recorded
        and _snapshot_may_be_left_alone(target_relation) -%}
    {#- A record that differs: an input has a commit since, so dbt's materialization runs without
        the idle probe first (its MERGE still commits nothing when no row changed). -#}
    {%- set inputs_moved = inputs is not none and recorded is not none and inputs != recorded -%}
    {%- if unchanged or (not inputs_moved and _snapshot_is_idle(target_relation)) -%}
        {{ log(
            'commit_only_changes: ' ~ target_relation
            ~ (' holds the result of its recorded inputs' if unchanged else ' has no changes')
            ~ '; nothing staged or committed',
            info=false
        ) }}
        {#- dbt's noop_statement: the node's result without a statement run on Spark. -#}
        {%- call noop_statement('main', 'no changes for ' ~ target_relation, 'SKIP', 0) -%}
            -- no changes for {{ target_relation }}: nothing staged or committed
        {%- endcall -%}
        {{ return({'relations': [target_relation]}) }}
    {%- endif -%}
    {%- set result = dbt.materialization_snapshot_spark() -%}
    {#- The relation it returns: dbt adds a new table to its relation cache only after this. -#}
    {%- do _record_snapshot_inputs(result['relations'][0], inputs) -%}
    {{ return(result) }}
{%- endmaterialization -%}


{#-
    Private. Whether a run of the snapshot may be left out when it would change nothing: the table
    `target_relation` exists, and the snapshot has no hooks, grants, persisted docs,
    `dbt_valid_to_current` or hard deletes other than `ignore` (each of which dbt's materialization
    applies on every run; the hard-delete behaviour as dbt's strategies read it from the config,
    `adapter.get_hard_deletes_behavior`).
-#}
{%- macro _snapshot_may_be_left_alone(target_relation) -%}
    {{ return(
        target_relation is not none and target_relation.is_table
        and not (pre_hooks or post_hooks or config.get('grants') or config.get('persist_docs')
            or config.get('dbt_valid_to_current'))
        and adapter.get_hard_deletes_behavior(model['config']) == 'ignore'
    ) }}
{%- endmacro -%}


{#-
    True when the snapshot table `target_relation` exists and a run of dbt's materialization would
    change nothing: its staging query finds no insert, update or delete, and every column of the
    staged rows is one of the table's. False (dbt's materialization runs) for a missing table,
    hooks, grants, persisted docs, `dbt_valid_to_current`, or hard deletes other than `ignore`.
-#}
{%- macro _snapshot_is_idle(target_relation) -%}
    {%- if not _snapshot_may_be_left_alone(target_relation) -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set strategy = strategy_dispatch(config.get('strategy'))(
        model, 'snapshotted_data', 'source_data', model['config'], true
    ) -%}
    {%- set staged = snapshot_staging_table(strategy, sql, target_relation) -%}
    {%- set probe = run_query(
        'select * from (' ~ staged ~ ') as staged'
        ~ " where dbt_change_type in ('insert', 'update', 'delete') limit 1"
    ) -%}
    {%- if probe.rows | length > 0 -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set existing = adapter.get_columns_in_relation(target_relation)
        | map(attribute='name') | map('lower') | list -%}
    {%- set staging_only = ['dbt_change_type', 'dbt_unique_key'] -%}
    {%- for column in probe.column_names if column | lower not in existing + staging_only -%}
        {{ return(false) }}
    {%- endfor -%}
    {{ return(true) }}
{%- endmacro -%}


{#-
    Private. This run's inputs of the snapshot being run, as the JSON text its table records:
    {"code": md5 of dbt's version, the snapshot's SQL and config and the text of each view it reads
    through, "inputs": {"<schema>.<table>": "<data version>@<its commit time>" of each table it
    reads, through views}} (the time tells a table made again, whose versions start over, from
    the one before). None when the table states are not given or a table it reads is not among
    them (nothing is then recorded or skipped), or a view it reads does not exist. Runs one `show
    create table` per view read.
-#}
{%- macro _snapshot_inputs() -%}
    {%- set states = table_states() -%}
    {%- if not states -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set versions = {} -%}
    {%- set texts = [] -%}
    {%- set pending = model.depends_on.nodes | list -%}
    {%- for unique_id in pending -%}
        {%- set node = graph.sources.get(unique_id) or graph.nodes.get(unique_id) -%}
        {%- set materialized = none if node is none or unique_id in graph.sources else node.config.materialized -%}
        {%- if node is none -%}
            {%- do versions.update({unique_id: none}) -%}
        {%- elif materialized in ('view', 'ephemeral') -%}
            {%- do texts.append(_view_text(node) if materialized == 'view' else '') -%}
            {%- do pending.extend(node.depends_on.nodes) -%}
        {%- else -%}
            {%- set table = _state_key(node.schema, node.identifier if unique_id in graph.sources else node.alias) -%}
            {%- set state = states.get(table, {}) -%}
            {%- do versions.update({table: none if state.get('data_committed_ms') is none
                else state['data_version'] ~ '@' ~ state['data_committed_ms']}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if none in versions.values() or none in texts -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set code = local_md5(dbt_version ~ '|' ~ sql ~ '|' ~ tojson(model.config, sort_keys=true) ~ '|' ~ texts | join('|')) -%}
    {{ return(tojson({'code': code, 'inputs': versions}, sort_keys=true)) }}
{%- endmacro -%}


{#-
    Private. The text of the view of the graph node `node` as the metastore stores it, less the time
    it was made (a view made again with the same text and columns reads the same rows); none when
    there is no such view.
-#}
{%- macro _view_text(node) -%}
    {%- set relation = adapter.get_relation(database=none, schema=node.schema, identifier=node.alias) -%}
    {%- if relation is none or not relation.is_view -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set text = run_query('show create table ' ~ relation).rows[0][0] -%}
    {{ return(modules.re.sub("'transient_lastDdlTime' = '[0-9]*'", '', text)) }}
{%- endmacro -%}


{#- Private. The inputs recorded on the snapshot table and still true (run_dbt's table states), or none. -#}
{%- macro _snapshot_recorded_inputs() -%}
    {%- set key = _state_key(model.schema, model.get('alias', model.get('name'))) -%}
    {{ return(table_states().get(key, {}).get('recorded_inputs')) }}
{%- endmacro -%}


{#- Private. Records `inputs` (none: nothing) on the snapshot table: one commit of its properties. -#}
{%- macro _record_snapshot_inputs(target_relation, inputs) -%}
    {%- if inputs is not none and target_relation is not none -%}
        {%- call statement('record_snapshot_inputs') -%}
            alter table {{ target_relation }} set tblproperties ('payledger.snapshot_inputs' = {{ quoted_literal(inputs) }})
        {%- endcall -%}
    {%- endif -%}
{%- endmacro -%}
