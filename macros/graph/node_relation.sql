{% macro node_relation(name) -%}
    {#-
        The relation of this project's model, snapshot or seed named `name`, or the stored failures
        of its data test `name`, from dbt's graph (`graph.nodes`): its database, schema and alias as
        configured (`+schema`, `alias`), so a renamed schema or alias is followed. For a model that
        reads a downstream model's stored state (a back-edge, which `ref` would turn into a cycle).
        Whether the table exists yet is `load_relation(node_relation(name))` (none when not built).
        Raises a compiler error when the graph has no such node (renamed or disabled).
    -#}
    {%- for node in graph.nodes.values()
        if node.package_name == project_name and node.name == name and node.resource_type in ['model', 'snapshot', 'seed', 'test'] -%}
        {{- return(api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias, type='table')) -}}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error(
        "node_relation: this project has no model, snapshot, seed or test named " ~ name ~ " (renamed or disabled?); "
        ~ "the balance models read its stored state."
    ) }}
{%- endmacro %}
