package proctab

// Groups is groups, for the tests.
var Groups = groups
