"""Ready-made model directories (the repository's ``model_templates/``) and tools that render
them into a model repository under new names.

Templates: ``minimal`` (text in, upper-cased text out, with its own test: what ``tritonpy
new NAME`` renders by default), ``image_preprocess``, ``classification_postprocess``,
``detection_postprocess``, ``torch_model``, ``ensemble_classifier``, ``text_stream`` (a
streaming model), ``online_normalizer`` (a stateful model on Triton's sequence batcher) and
``bls_router`` (a BLS pipeline; see each one's README.md).

A template may bring the models it calls: each ``members/<role>/`` directory of a template is
rendered with it as ``<name>_<role>``, and a config.pbtxt parameter of the template whose value
is ``<template>_<role>`` becomes ``<name>_<role>`` (``tritonpy new reviews --template
bls_router`` writes ``reviews``, ``reviews_short`` and ``reviews_long``).

Example, a grayscale 8x8 preprocess model in ``model_repository/``::

    from pathlib import Path
    from tritonpy.templates import render_template

    render_template("image_preprocess", "my_preprocess", Path("model_repository"),
                    parameters={"size": "8x8", "color": "GRAY", "mean": "0.5", "std": "0.5"})

the ensemble_classifier template with its three members, ready to check and serve (the
classifier's weights untrained unless ``train=True``)::

    from tritonpy.templates import render_classifier_ensemble

    rendered = render_classifier_ensemble("digits", Path("model_repository"))
    rendered.models      # ['digits', 'digits_preprocess', 'digits_classifier', ...]

and the whole digits ensemble with trained weights and the held-out digits to send::

    from tritonpy.templates import render_digits_ensemble

    digits = render_digits_ensemble(Path("model_repository"))
    digits.ensemble, digits.images[0], digits.labels[0]   # "digits", PNG bytes, 7

Templates are looked up in the directory named by ``$TRITONPY_TEMPLATES`` when set, otherwise
among the files shipped with tritonpy (the wheel carries ``model_templates/``; a source
checkout or an editable install reads the repository's). Rendering needs
``tritonclient[grpc]`` (``pip install 'tritonpy[config]'``); the ensemble's classifier
weights need torch, and training them scikit-learn and OpenCV as well.
"""

from .._runtime._public_names import publish as _publish
from ._ensembles import (
    ENSEMBLE_TEMPLATE,
    ClassifierEnsemble,
    DigitsEnsemble,
    digits_holdout,
    render_classifier_ensemble,
    render_digits_ensemble,
)
from ._finding import (
    TEMPLATES_ENV,
    TemplateError,
    TemplateExistsError,
    TemplateNotFoundError,
    describe_template,
    list_templates,
    template_dir,
    templates_root,
)
from ._rendering import render_template

__all__ = [
    "ENSEMBLE_TEMPLATE",
    "TEMPLATES_ENV",
    "ClassifierEnsemble",
    "DigitsEnsemble",
    "TemplateError",
    "TemplateExistsError",
    "TemplateNotFoundError",
    "describe_template",
    "digits_holdout",
    "list_templates",
    "render_classifier_ensemble",
    "render_digits_ensemble",
    "render_template",
    "template_dir",
    "templates_root",
]

_publish(__name__, globals())
