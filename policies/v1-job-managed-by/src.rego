{# The same Rego as trainjob-managed-by; this rule's template_vars name the v1 field and values. #}
{% include "trainjob_managed_by/template.rego.j2" %}
