{% macro view_is_current(relation, sql) -%}
    {#-
        Whether the view `relation` exists and stores `sql` as its query and the columns (names
        and types) `sql` yields now, so that creating it again would change nothing
        (the `view` materialization keeps it then).
    -#}
    {{- return(format_variant('view_is_current')(relation, sql)) -}}
{%- endmacro %}


{% macro delta__view_is_current(relation, sql) -%}
    {#-
        A Spark view in the metastore: `describe table extended` gives its stored columns, a blank
        row, then its details (`View Text`: the query as created, trimmed); `describe query` gives
        the columns `sql` yields now. The columns can differ while the text does not: a landing
        table whose amounts `payledger load` widened changes a staging view's columns.
    -#}
    {#- Only a view in a schema is looked up (dbt-spark stages some snapshots in a view without one). -#}
    {%- set existing = none if relation.schema is none else
        adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
    {%- if existing is none or not existing.is_view -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- set stored_columns, details = [], {} -%}
    {%- for row in run_query('describe table extended ' ~ relation.render()) -%}
        {%- if details or not row[0] -%}
            {%- do details.update({row[0]: row[1]}) -%}
        {%- else -%}
            {%- do stored_columns.append([row[0], row[1]]) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if details.get('View Text') != sql | trim -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- set query_columns = [] -%}
    {%- for row in run_query('describe query ' ~ sql) -%}
        {%- do query_columns.append([row[0], row[1]]) -%}
    {%- endfor -%}
    {{- return(query_columns == stored_columns) -}}
{%- endmacro %}


{% macro iceberg__view_is_current(relation, sql) -%}
    {#- An Iceberg view (Iceberg's SparkCatalog owns spark_catalog): its `describe table extended`
        gives no query text to compare, so it is always created again. -#}
    {{- return(false) -}}
{%- endmacro %}
