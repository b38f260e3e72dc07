"""How a buyer checks a price the ranking holds back: a plan that is cheaper at its stated price but ranks
lower because that price is an estimate (derived, guessed, a third party's copy) counted at the top of its
margin (data/plan_costs.yaml). The sentence names the plan, its price at point value, how the price was
obtained and the command that replaces it with a real one: a live refresh of that region (with the
cloud's credentials) or the buyer's own console quote (``gpuplan catalog import FILE``)."""

from __future__ import annotations

from gpuplan.i18n import N_, _
from gpuplan.plan.record import Plan

# The live refresh of each cloud that has one (gpuplan.providers.REFRESHABLE_CLOUDS), for one region.
REFRESH_COMMANDS = {"alibaba": "gpuplan catalog refresh --region {region}",
                    "aws": "gpuplan catalog refresh --cloud aws --region {region}"}
CLOUD_CREDENTIALS = {"alibaba": N_("Alibaba Cloud credentials"), "aws": N_("AWS credentials")}
IMPORT_COMMAND = "gpuplan catalog import FILE"
# How the held-back price was obtained (plan.cost.price_basis, and whose quote it is)
HOW = {"derived": N_("derived (no quote for this type, region and billing mode)"),
       "guessed": N_("guessed (no row supports it)"),
       "third-party": N_("a third party's copy of a quote")}


def how_obtained(p: Plan) -> str:
    c = p.cost
    basis = c.price_basis or ("derived" if c.price_estimated else "quoted")
    return _(HOW.get(basis if basis != "quoted" else "third-party", HOW["derived"]))


def check_command(cloud: str, region: str | None) -> str:
    """"check it with `gpuplan catalog refresh --region R` (Alibaba Cloud credentials) or with your console
    quote: `gpuplan catalog import FILE`" (a cloud without a live refresh: the import only)."""
    refresh = REFRESH_COMMANDS.get(cloud)
    if refresh and region:
        return _("check it with `{refresh}` ({credentials}) or with your console quote: `{import_}`").format(
            refresh=refresh.format(region=region), credentials=_(CLOUD_CREDENTIALS[cloud]), import_=IMPORT_COMMAND)
    return _("check it with your console quote: `{import_}`").format(import_=IMPORT_COMMAND)


def held_back_reason(q: Plan) -> str:
    """Why a plan that shows less ranks lower because of its price's margin (the clause of the headline)."""
    return _("its price is {how}, counted up to {margin} higher").format(how=how_obtained(q),
                                                                       margin=f"{q.cost_margin:.0%}")


def held_back_check(q: Plan, cloud: str, named: bool = True) -> str:
    """The line after it: how to check that plan's price ("plan 3: check it with `...` or ..."); ``named``: by
    its rank (it is shown), else by its instance type."""
    if not named:
        return _("{instance} (not shown): {check}").format(instance=q.short_name,
                                                           check=check_command(cloud, q.cost.region))
    return _("plan {rank}: {check}").format(rank=q.rank, check=check_command(cloud, q.cost.region))
