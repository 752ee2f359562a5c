{% macro _published_build(build=none) -%}
    {#-
        Private. What balance_invalidations recorded for build `build` (a dbt invocation id; none:
        the latest build that recorded a view version): {'invocation_id', 'view_version',
        'events_watermark', 'policy_observed_at' (a string, UTC, or none)}. Raises a compiler error
        when the id is malformed or no such build published a version. Given such a dict (a build
        its caller resolved), returns it as it is: the build is resolved once.
    -#}
    {#- ref before anything returns: dbt records the dependency while parsing (execute is false). -#}
    {%- set audit = ref('balance_invalidations') -%}
    {%- if not execute -%}
        {{ return({'invocation_id': build, 'view_version': 0, 'events_watermark': 0, 'policy_observed_at': none}) }}
    {%- endif -%}
    {#- A build the caller resolved already (payledger explain: history.PublishedBuild.jinja_literal). #}
    {%- if build is mapping -%}
        {%- if not (build.events_watermark is number and (build.policy_observed_at is none or build.policy_observed_at is string)) -%}
            {{ exceptions.raise_compiler_error("a resolved build needs events_watermark (a number) and policy_observed_at, got " ~ build | tojson) }}
        {%- endif -%}
        {{ return(build) }}
    {%- endif -%}
    {%- if build is not none and not (build is string and modules.re.fullmatch(identifier_pattern('invocation_id'), build)) -%}
        {{ exceptions.raise_compiler_error("build must be a dbt invocation id (a lowercase UUID), got " ~ (build | string | tojson)) }}
    {%- endif -%}
    {%- if load_relation(audit) is none -%}
        {{ exceptions.raise_compiler_error("Nothing has been built yet (no " ~ audit ~ "): run dbt build first.") }}
    {%- endif -%}
    {%- set query -%}
        select
            invocation_id,
            max(view_version) as view_version,
            max(events_watermark) as events_watermark,
            cast(max(policy_observed_at) as string) as policy_observed_at
        from {{ audit }}
        where view_version is not null
            {% if build is not none %}and invocation_id = {{ quoted_literal(build) }}{% endif %}
        group by invocation_id
        order by max(recorded_at) desc
        limit 1
    {%- endset -%}
    {%- set found = run_query(query) -%}
    {%- if found.rows | length == 0 -%}
        {{ exceptions.raise_compiler_error(
            ("Build " ~ build ~ " published no version of the view: it is not a build of this warehouse, it changed nothing (a build with nothing new writes no version), or it ran before view versions were recorded.")
            if build is not none else "No build has recorded a version of the view yet: run dbt build first."
        ) }}
    {%- endif -%}
    {%- set row = found.rows[0] -%}
    {{- return({
        'invocation_id': row[0],
        'view_version': row[1] | int,
        'events_watermark': row[2] | int,
        'policy_observed_at': row[3],
    }) -}}
{%- endmacro %}
