import { describe, expect, it } from "vitest";
import { splitByCost } from "./Estimate";

describe("cost table", () => {
  it("keeps what costs money, most expensive first; folds the rest", () => {
    const { paid, free } = splitByCost([
      { address: "aws_vpc.main", monthly: 0 },
      { address: "aws_nat_gateway.nat", monthly: 32.85 },
      { address: "aws_eks_cluster.this", monthly: 73 },
      { address: "aws_iam_role.node" },
    ]);
    expect(paid.map((r) => r.address)).toEqual(["aws_eks_cluster.this", "aws_nat_gateway.nat"]);
    expect(free.map((r) => r.address)).toEqual(["aws_vpc.main", "aws_iam_role.node"]);
  });
});
