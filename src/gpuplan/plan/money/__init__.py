"""What a plan costs: prices and billing modes, spot with interruptions, fixed costs, data transfer, a draft's
costing and its 80 % ranges, the price margins the ranking uses."""
