"""Which ranking and Z calibration a recall scores with: those given (the lab's fits), else the
ones of the encoder whose vectors the tenant's index holds (``encoder_name``), built once per
encoder (the learned ranking, ``ranking.ranking_for``; the calibration from the settings,
``ZCalibration.from_settings``). ``ranking.py`` and ``zaxis.py`` hold the numbers; this only
picks them."""

from __future__ import annotations

from typing import Any

from brain_search.config import Settings
from brain_search.encoders.base import ENCODERS
from brain_search.retrieval.score.ranking import RankingParams, ranking_for
from brain_search.retrieval.score.zaxis import ZCalibration


def encoder_name(encoder: Any, settings: Settings, tenant_id: str | None = None) -> str:
    """The encoder the query vectors of ``tenant_id`` come from: the one its index records where
    the encoder follows indices (store/following.py; the shared index's without a tenant), else
    the settings' (a lab embedder names itself otherwise). ``encoder``: the recall's query
    encoder."""
    pick = getattr(encoder, "embedder_for", None)
    embedder = pick(tenant_id) if pick is not None else getattr(encoder, "embedder", None)
    name = getattr(embedder, "name", None)
    return name if name in ENCODERS else settings.embedding_model


class Tuning:
    def __init__(
        self,
        settings: Settings,
        ranking: RankingParams | None = None,
        calibration: ZCalibration | None = None,
    ) -> None:
        self.settings = settings
        self.given_ranking = ranking
        self.given_calibration = calibration
        self._rankings: dict[str, RankingParams] = {}
        self._calibrations: dict[str, ZCalibration] = {}

    def ranking(self, encoder: str) -> RankingParams:
        """The ranking given, else the one learned for ``encoder``."""
        if self.given_ranking is not None:
            return self.given_ranking
        found = self._rankings.get(encoder)
        if found is None:
            found = self._rankings[encoder] = ranking_for(encoder, self.settings.node_lift)
        return found

    def calibration(self, encoder: str) -> ZCalibration:
        """The Z calibration given, else the settings' for ``encoder`` (cosines are the encoder's
        own: its fitted values, ``EncoderInfo``, unless the settings name them)."""
        if self.given_calibration is not None:
            return self.given_calibration
        found = self._calibrations.get(encoder)
        if found is None:
            found = ZCalibration.from_settings(self.settings.model_copy(update={"embedding_model": encoder}))
            self._calibrations[encoder] = found
        return found
