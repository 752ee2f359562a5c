{% test valid_rows(model, unique=none, not_null=none, accepted_values=none, scoped_by=none) %}
{#-
    A model's row checks in one scan (one aggregate), instead of a scan per `unique`, `not_null`
    and `accepted_values` test: returns one row per check that fails, with the number of rows that
    fail it.
    - `unique`: keys, each a column name, a list of columns, or `{columns: [...], where: <sql>}`
      (the key of the rows the condition selects): no key value occurs twice, no key has a null part;
    - `not_null`: columns that are never null;
    - `accepted_values`: `{column: [values]}`; a null is not checked (as dbt's `accepted_values`);
    - `scoped_by`: which rows a build that payledger runs (checked_since) checks: the rows that came
      after the published build, with the earlier rows that share a `unique` key with one of them
      (so a new key equal to an old one is still a duplicate); the published build checked the
      rest. Every row otherwise. Either an ingest position column (`ingest_seq`: the rows past the
      published build's events watermark) or `{written_at: <column>, partition: <column>}` (the
      rows written after the publication, for a table that rewrites rows in place; every `unique`
      key holds the partition column, so only the partitions written since are read).
      A `unique` key with `earlier_rows_checked_by: <data test>` is checked among the new rows only:
      the named test of the project finds a new key equal to an earlier one at a cost bounded by
      the change, where the earlier rows sharing a key are a scan of all history. A compiler error
      when that test is not in the project.
-#}
{%- set specs = [] -%}
{%- for key in unique or [] -%}
    {%- do specs.append(key if key is mapping else {'columns': [key] if key is string else key}) -%}
{%- endfor -%}
{%- set spec_keys = ['columns', 'where', 'earlier_rows_checked_by'] -%}
{%- for spec in specs if 'columns' not in spec or spec.keys() | reject('in', spec_keys) | list -%}
    {{ exceptions.raise_compiler_error('valid_rows on ' ~ model ~ ': a unique key is a column, a list of columns or {columns: [...], where: <condition>, earlier_rows_checked_by: <data test>}, got ' ~ spec) }}
{%- endfor -%}
{%- for spec in specs if spec.get('earlier_rows_checked_by') -%}
    {%- if not scoped_by -%}
        {{ exceptions.raise_compiler_error('valid_rows on ' ~ model ~ ': earlier_rows_checked_by needs scoped_by') }}
    {%- endif -%}
    {%- if execute and not graph.nodes.values() | selectattr('resource_type', 'equalto', 'test') | selectattr('name', 'equalto', spec['earlier_rows_checked_by']) | list -%}
        {{ exceptions.raise_compiler_error('valid_rows on ' ~ model ~ ': earlier_rows_checked_by names no data test of the project: ' ~ spec['earlier_rows_checked_by']) }}
    {%- endif -%}
{%- endfor -%}
{%- set scoping = {'ingest_seq': scoped_by} if scoped_by is string else (scoped_by if scoped_by is mapping else {}) -%}
{%- if scoped_by and not (scoping.keys() | sort | list in [['ingest_seq'], ['partition', 'written_at']]) -%}
    {{ exceptions.raise_compiler_error('valid_rows on ' ~ model ~ ': scoped_by is an ingest position column or {written_at: <column>, partition: <column>}, got ' ~ scoped_by) }}
{%- endif -%}
{%- for spec in specs if scoping.get('partition') and scoping.get('partition') not in spec['columns'] -%}
    {{ exceptions.raise_compiler_error('valid_rows on ' ~ model ~ ': the key (' ~ spec['columns'] | join(', ') ~ ') does not hold the partition column ' ~ scoping.get('partition')) }}
{%- endfor -%}
{%- set since = checked_since() if scoped_by else none -%}
{%- set scope = namespace(rows='true') -%}
{%- if since is not none -%}
    {%- set new_rows = changed_since_checked(since, ingest_seq=scoping.get('ingest_seq'), written_at=scoping.get('written_at')) -%}
    {%- set parts = [new_rows] -%}
    {%- for spec in specs if spec['columns'] | list != [scoping.get('ingest_seq')] and not spec.get('earlier_rows_checked_by') -%}
        {%- set columns = spec['columns'] | join(', ') -%}
        {%- do parts.append(
            '(' ~ columns ~ ') in (select ' ~ columns ~ ' from ' ~ model ~ ' where ' ~ new_rows
            ~ ' and (' ~ (spec.get('where') or 'true') ~ '))'
        ) -%}
    {%- endfor -%}
    {%- set scope.rows = parts | join(' or ') -%}
{%- endif -%}
{%- set checks = [] -%}
{%- for spec in specs -%}
    {%- set where = spec.get('where') or 'true' -%}
    {%- set all_present = '(' ~ where ~ ') and ' ~ spec['columns'] | join(' is not null and ') ~ ' is not null' -%}
    {%- set key_label = spec['columns'] | join(', ') ~ (' where ' ~ spec['where'] if spec.get('where') else '') -%}
    {%- do checks.append((
        'duplicate key (' ~ key_label ~ ')',
        'count(case when ' ~ all_present ~ ' then 1 end) - count(distinct case when '
            ~ all_present ~ ' then struct(' ~ spec['columns'] | join(', ') ~ ') end)'
    )) -%}
    {%- do checks.append((
        'null in key (' ~ key_label ~ ')',
        'count(case when (' ~ where ~ ') and not (' ~ all_present ~ ') then 1 end)'
    )) -%}
{%- endfor -%}
{%- for column in not_null or [] -%}
    {%- do checks.append(('null ' ~ column, 'count(*) - count(' ~ column ~ ')')) -%}
{%- endfor -%}
{%- for column, values in (accepted_values or {}).items() -%}
    {%- do checks.append((
        'unaccepted value of ' ~ column,
        'count(case when ' ~ column ~ " not in ('" ~ values | join("', '") ~ "') then 1 end)"
    )) -%}
{%- endfor -%}
{%- if not checks -%}
    {{ exceptions.raise_compiler_error('valid_rows on ' ~ model ~ ': no check given (unique, not_null or accepted_values)') }}
{%- endif %}
{#- Scoped by partition, the partitions written since are a join of their own, broadcast so that
    dynamic partition pruning reads only them (a semi join, `in (select ...)`, is a sort-merge join
    once the table outgrows the broadcast threshold, and then reads every partition); rows written
    since with a null partition value are added back: the join drops them. #}
with scoped_rows as (
    {% if since is not none and scoping.get('partition') -%}
    select /*+ BROADCAST(partitions_written) */ model_rows.*
    from {{ model }} as model_rows
    inner join (
        select distinct {{ scoping.get('partition') }} as written_partition from {{ model }} where {{ new_rows }}
    ) as partitions_written
        on model_rows.{{ scoping.get('partition') }} = partitions_written.written_partition
    where {{ scope.rows }}
    union all
    select * from {{ model }}
    where {{ new_rows }} and {{ scoping.get('partition') }} is null
    {%- else -%}
    select * from {{ model }}
    where {{ scope.rows }}
    {%- endif %}
),

counted as (
    select
        {% for label, failing in checks -%}
            {{ failing }} as check_{{ loop.index }}{{ ',' if not loop.last }}
        {% endfor %}
    from scoped_rows
),

checked as (
    select stack(
        {{ checks | length }},
        {% for label, failing in checks -%}
            '{{ label | replace("'", "\\'") }}', check_{{ loop.index }}{{ ',' if not loop.last }}
        {% endfor %}
    ) as (failed_check, failing_rows)
    from counted
)

select
    failed_check,
    failing_rows
from checked
where failing_rows > 0
{% endtest %}
