"""A catalog case as Gatekeeper sees it: input.review, data.inventory and the external_data answer."""

from __future__ import annotations

import json
from typing import Any

from generator.catalog.model import AUDIT, Case, Rule
from generator.gatekeeper.documents import Document, dig
from generator.gatekeeper.external_data import ExternalData, InProcessProvider
from generator.gatekeeper.inventory import build_inventory
from generator.gatekeeper.review import (
    AdmissionRequest,
    admission_review_document,
    apiserver_request,
    audit_request,
    request_from_document,
)
from provider.handler import ProviderHandler
from provider.sources import StaticJobSetSource


def admission_review(case: Case) -> dict[str, Any]:
    """The case as the admission.k8s.io/v1 AdmissionReview an API server sends (not for AUDIT cases)."""
    return admission_review_document(apiserver_request(case.operation, case.object, case.old_object, uid=case.uid))


def audit_review(obj: dict[str, Any]) -> dict[str, Any]:
    """What Gatekeeper's audit passes as input.review: no operation, no oldObject, no userInfo."""
    return audit_request(obj).as_input()


def review_input(case: Case) -> dict[str, Any]:
    """input.review for the case, as Gatekeeper builds it."""
    if case.operation == AUDIT:
        assert case.object is not None, case.name
        return audit_review(case.object)
    return request_from_document(Document(case.name, admission_review(case))).as_input()


def admission_request(case: Case) -> AdmissionRequest:
    return AdmissionRequest(review_input(case))


def parameters(rule: Rule, case: Case) -> dict[str, Any]:
    return rule.default_parameters() if case.parameters is None else case.parameters


def inventory(case: Case) -> dict[str, Any]:
    return build_inventory(case.cluster)


def trainjob_key(case: Case) -> str:
    """The key the external-data rule looks up for the case's request: <namespace>/<name>#<request uid>."""
    obj = case.object or case.old_object or {}
    return f"{dig(obj, 'metadata', 'namespace') or ''}/{dig(obj, 'metadata', 'name') or ''}#{case.uid}"


def external_data_answer(case: Case, provider: str) -> dict[str, Any]:
    """The builtin's answer for the TrainJob's key: the case's literal one, or the provider's over `cluster`."""
    if case.external_data is not None:
        return case.external_data
    handler = ProviderHandler(StaticJobSetSource(case.cluster))
    builtin = ExternalData({provider: InProcessProvider(handler.handle)}, cache=None)
    return json.loads(json.dumps(builtin({"provider": provider, "keys": [trainjob_key(case)]})))


def suite_runnable(case: Case) -> bool:
    """Suites use the default Constraint and, for external data, the provider's real answer."""
    return case.parameters is None and case.external_data is None
