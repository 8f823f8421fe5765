// Package handler defines the interface a class controller's allocation policy
// implements. It holds no controller machinery: the resourceslice package
// fetches, filters, validates and saves; a Handler only decides.
package handler
