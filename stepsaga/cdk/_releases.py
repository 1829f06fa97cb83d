"""Canary releases of the functions' ``live`` aliases, rolled back by an alarm (CodeDeploy).

Every function's ``live`` alias (the saga's functions, the overdue check, the ingress
starter, the redriver) gets a CodeDeploy deployment group: when a deploy publishes a new
version, CloudFormation hands the alias update to CodeDeploy, which sends
``Canary.percent`` % of invocations to the new version for ``Canary.minutes`` minutes, then
the rest. If a rollback alarm fires meanwhile, or the deployment fails or is stopped, the
alias goes back to the previous version and the stack update fails.

The rollback alarm is ``ReleaseFaults`` (faults in the functions: errors minus the outcomes
a ``Catch`` routes), the one that a bad release trips first. Execution-level alarms
(``TechnicalFailures``) are left out on purpose: a release that fixes an incident must not
be rolled back for the incident it fixes. The ingress starter's faults have an alarm of
their own, ``IngressReleaseFaults``, which only the starter's group adds (the starter depends
on the state machine's alias, which depends on the functions' aliases: one alarm over all
would be a CloudFormation cycle). All groups share one application, one deployment
configuration and one service role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from stepsaga.cdk._settings import Canary

__all__ = ["OWN_ROLLBACK_ALARMS", "ROLLBACK_ALARMS", "CanaryReleases"]

#: The alarms (``stepsaga.cdk._alarms.RULES``) that roll every release back, and those that
#: roll back one function's only (logical function name → alarm names).
ROLLBACK_ALARMS = ("ReleaseFaults",)
OWN_ROLLBACK_ALARMS = {"IngressStarter": ("IngressReleaseFaults",)}


class CanaryReleases(Construct):
    """``application``, ``config`` and ``groups`` (logical function name → its group)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        aliases: Mapping[str, lambda_.Alias],
        canary: Canary,
        alarms: Sequence[cloudwatch.IAlarm],
        own_alarms: Mapping[str, Sequence[cloudwatch.IAlarm]] | None = None,
    ) -> None:
        """``alarms`` roll back every group; ``own_alarms`` (logical function name →
        alarms) are added to that function's group only."""
        super().__init__(scope, construct_id)
        own_alarms = own_alarms or {}
        self.application = codedeploy.LambdaApplication(self, "Application")
        self.config = codedeploy.LambdaDeploymentConfig(
            self,
            "Canary",
            traffic_routing=codedeploy.TimeBasedCanaryTrafficRouting(
                interval=Duration.minutes(canary.minutes), percentage=canary.percent
            ),
        )
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("codedeploy.amazonaws.com"),
            description="CodeDeploy: shifts the functions' live aliases, reads the alarms",
        )
        # What AWS's AWSCodeDeployRoleForLambdaLimited grants a Lambda deployment without
        # hooks, on exactly these aliases and alarms. The alias ARNs are written from the
        # functions' (a reference to the aliases would be a cycle: each alias's update
        # policy names its deployment group, which depends on this role).
        live = [
            f"{alias.version.lambda_.function_arn}:{alias.alias_name}" for alias in aliases.values()
        ]
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ShiftLiveAliases",
                actions=[
                    "lambda:GetAlias",
                    "lambda:UpdateAlias",
                    "lambda:GetProvisionedConcurrencyConfig",
                ],
                resources=live,
            )
        )
        own = [alarm for name in aliases for alarm in own_alarms.get(name, ())]
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ReadRollbackAlarms",
                actions=["cloudwatch:DescribeAlarms"],
                resources=[alarm.alarm_arn for alarm in [*alarms, *own]],
            )
        )
        self.groups: dict[str, codedeploy.LambdaDeploymentGroup] = {
            name: codedeploy.LambdaDeploymentGroup(
                self,
                name,
                application=self.application,
                alias=alias,
                deployment_config=self.config,
                alarms=[*alarms, *own_alarms.get(name, ())],
                # CDK would attach AWSCodeDeployRoleForLambdaLimited (Resource "*"); the
                # role has its exact statements above instead.
                role=role.without_policy_updates(),
                auto_rollback=codedeploy.AutoRollbackConfig(
                    failed_deployment=True, stopped_deployment=True, deployment_in_alarm=True
                ),
            )
            for name, alias in aliases.items()
        }
